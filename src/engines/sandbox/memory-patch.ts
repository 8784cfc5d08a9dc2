/**
 * A machine's memory snapshot as a patch on its base image: the snapshot's own header, then the
 * runs of words where its heap differs from the base heap, as XOR. A trivial machine's 20 MiB heap
 * differs from the base in ~100 KB, so this is what crosses between a sandbox and the host (both
 * can read the base) and what is stored on disk. Layout, all u32 little-endian and 4-byte aligned:
 * snapshot length, header length, header (padded), then per run: heap offset, length, bytes.
 */

/** Runs closer than this many bytes are sent as one, as a run costs 8 bytes of its own. */
const JOIN_GAP = 16;

function padded(length: number): number {
  return (length + 3) & ~3;
}

/** Where the heap starts in a Pyodide snapshot (after its header and hiwire table). */
export function heapOffset(snapshot: Uint8Array): number {
  return new DataView(snapshot.buffer, snapshot.byteOffset, 8).getUint32(4, true);
}

/** `target ^= source` over their common length. */
function xorInto(target: Uint8Array, source: Uint8Array): void {
  const length = Math.min(target.length, source.length);
  const words = length >>> 2;
  if (target.byteOffset % 4 === 0 && source.byteOffset % 4 === 0) {
    const a = new Uint32Array(target.buffer, target.byteOffset, words);
    const b = new Uint32Array(source.buffer, source.byteOffset, words);
    for (let i = 0; i < words; i++) a[i]! ^= b[i]!;
    for (let i = words * 4; i < length; i++) target[i]! ^= source[i]!;
  } else {
    for (let i = 0; i < length; i++) target[i]! ^= source[i]!;
  }
}

/**
 * The patch that turns `base` into `snapshot`. It XORs `snapshot`'s heap in place (the snapshot is
 * consumed). Wasm memory never moves, so heaps line up.
 */
export function makeMemoryPatch(snapshot: Uint8Array, base: Uint8Array): Uint8Array {
  const start = heapOffset(snapshot);
  // The heap is scanned as words. A snapshot that crossed IPC whole (a machine loaded from an
  // older base) may sit at any offset of its buffer: its heap is then copied to a word boundary.
  let heap = snapshot.subarray(start);
  if (heap.byteOffset % 4 !== 0) heap = heap.slice();
  xorInto(heap, base.subarray(heapOffset(base)));
  const words = new Uint32Array(heap.buffer, heap.byteOffset, heap.length >>> 2);
  const runs: Array<[number, number]> = [];
  for (let i = 0; i < words.length; i++) {
    if (words[i] === 0) continue;
    let end = i + 1;
    while (end < words.length && words[end] !== 0) end++;
    const last = runs.at(-1);
    if (last && i * 4 - last[1] <= JOIN_GAP) last[1] = end * 4;
    else runs.push([i * 4, end * 4]);
    i = end;
  }
  // A heap whose length is not a multiple of 4 keeps its last bytes as a run of their own.
  const tail = heap.length & 3;
  if (tail && heap.subarray(heap.length - tail).some((b) => b !== 0)) runs.push([heap.length - tail, heap.length]);

  const size = 8 + padded(start) + runs.reduce((sum, [from, to]) => sum + 8 + padded(to - from), 0);
  const patch = new Uint8Array(size);
  const view = new DataView(patch.buffer);
  view.setUint32(0, snapshot.length, true);
  view.setUint32(4, start, true);
  patch.set(snapshot.subarray(0, start), 8);
  let at = 8 + padded(start);
  for (const [from, to] of runs) {
    view.setUint32(at, from, true);
    view.setUint32(at + 4, to - from, true);
    patch.set(heap.subarray(from, to), at + 8);
    at += 8 + padded(to - from);
  }
  return patch;
}

/** The patch that makes a base snapshot itself, from its header (the bytes before its heap) and length. */
export function identityPatch(header: Uint8Array, length: number): Uint8Array {
  const patch = new Uint8Array(8 + padded(header.length));
  const view = new DataView(patch.buffer);
  view.setUint32(0, length, true);
  view.setUint32(4, header.length, true);
  patch.set(header, 8);
  return patch;
}

/** The snapshot a patch makes: its length, and its header (the snapshot up to its heap, a copy). */
export function patchedSnapshot(patch: Uint8Array): { length: number; header: Uint8Array } {
  const view = new DataView(patch.buffer, patch.byteOffset, 8);
  return { length: view.getUint32(0, true), header: patch.slice(8, 8 + view.getUint32(4, true)) };
}

/** The whole snapshot from a patch and the base snapshot it was made against (left untouched). */
export function applyMemoryPatch(patch: Uint8Array, base: Uint8Array): Uint8Array {
  const { length, header } = patchedSnapshot(patch);
  const snapshot = new Uint8Array(length);
  snapshot.set(header);
  const heap = snapshot.subarray(header.length);
  const baseHeap = base.subarray(heapOffset(base));
  heap.set(baseHeap.subarray(0, Math.min(baseHeap.length, heap.length)));
  applyPatchRuns(patch, heap);
  return snapshot;
}

/** XORs a patch's runs into `heap`, which holds the base's heap (zero past it). */
export function applyPatchRuns(patch: Uint8Array, heap: Uint8Array): void {
  const view = new DataView(patch.buffer, patch.byteOffset, patch.length);
  const start = view.getUint32(4, true);
  for (let at = 8 + padded(start); at < patch.length;) {
    const from = view.getUint32(at, true);
    const count = view.getUint32(at + 4, true);
    if (from + count > heap.length) throw new Error('the memory patch does not fit its snapshot');
    const bytes = patch.subarray(at + 8, at + 8 + count);
    for (let i = 0; i < count; i++) heap[from + i]! ^= bytes[i]!;
    at += 8 + padded(count);
  }
}
