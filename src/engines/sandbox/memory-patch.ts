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

/** A patch larger than this is given to its caller in the builder's own buffer, rather than copied out of it. */
const HAND_OVER_BYTES = 1 << 20;

/**
 * A patch, built from the differences of a heap from its base in heap order, in place: each run's
 * head, then its bytes, as they come. A machine that grew 80 MB past its base is an 80 MB patch,
 * which a copy into memory of its own would fault in page by page again (~45 ms).
 */
export class PatchBuilder {
  #data = new Uint8Array(1 << 16);
  #used = 0;
  /** The last run: where its head is in `#data` (-1: no run yet), and its heap offsets. */
  #lastAt = -1;
  #lastFrom = 0;
  #lastTo = 0;

  /** Gives back the room past `bytes` the last patch took. */
  shrink(bytes: number): void {
    if (this.#data.length <= bytes) return;
    this.#data = new Uint8Array(1 << 16);
    this.#used = 0;
  }

  /**
   * Starts the patch of a snapshot of `length` bytes whose header (the bytes before its heap) is
   * `header`; `room`: what it will likely take, made at once rather than grown to.
   */
  begin(header: Uint8Array, length: number, room = 0): void {
    // Joins and padding rely on the data past what is used being zero.
    this.#data.fill(0, 0, Math.min(this.#used + JOIN_GAP + 8, this.#data.length));
    this.#used = 0;
    this.#lastAt = -1;
    this.#reserve(Math.max(room, 8 + padded(header.length)));
    const view = new DataView(this.#data.buffer);
    view.setUint32(0, length, true);
    view.setUint32(4, header.length, true);
    this.#data.set(header, 8);
    this.#used = 8 + padded(header.length);
  }

  /** `xor`: the heap's bytes XOR the base's, from heap offset `offset`. Read at once, not kept. */
  add(offset: number, xor: Uint8Array): void {
    const aligned = xor.byteOffset % 4 === 0 ? xor : xor.slice();
    const words = new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.length >>> 2);
    for (let i = 0; i < words.length; i++) {
      if (words[i] === 0) continue;
      let end = i + 1;
      while (end < words.length && words[end] !== 0) end++;
      this.run(offset + i * 4, aligned.subarray(i * 4, end * 4));
      i = end;
    }
    // A part whose length is not a multiple of 4 keeps its last bytes as a run of their own.
    const tail = aligned.length & 3;
    if (tail && aligned.subarray(aligned.length - tail).some((b) => b !== 0)) this.run(offset + aligned.length - tail, aligned.subarray(aligned.length - tail));
  }

  /** The patch. One larger than `HAND_OVER_BYTES` is the builder's buffer, which it no longer uses. */
  finish(): Uint8Array {
    this.#closeLast();
    const size = this.#used;
    if (size <= HAND_OVER_BYTES) return this.#data.slice(0, size);
    const patch = this.#data.subarray(0, size);
    this.#data = new Uint8Array(1 << 16);
    this.#used = 0;
    return patch;
  }

  /** A run: `bytes`, the heap's XOR the base's from heap offset `from`, after any run before. Read at once, not kept. */
  run(from: number, bytes: Uint8Array): void {
    this.#place(from, bytes.length);
    this.#data.set(bytes, this.#used);
    this.#used += bytes.length;
  }

  /**
   * A run of `count` words from heap word `word`: `heap`'s words there XOR `base`'s, whose word
   * `w - shift` is heap word `w`. Written straight into the patch (word-aligned in it, as runs of
   * words keep it): a heap that differs from its base everywhere (a machine holding a large list)
   * is a run per line.
   */
  xorRun(word: number, heap: Int32Array, base: Int32Array, shift: number, count: number): void {
    this.#place(word * 4, count * 4);
    const into = new Int32Array(this.#data.buffer, this.#used, count);
    for (let i = 0; i < count; i++) into[i] = heap[word + i]! ^ base[word + i - shift]!;
    this.#used += count * 4;
  }

  /** A run of `count` words from heap word `word` where the base is zero: `heap`'s words themselves. */
  copyRun(word: number, heap: Int32Array, count: number): void {
    const bytes = new Uint8Array(heap.buffer, heap.byteOffset + word * 4, count * 4);
    this.#place(word * 4, count * 4);
    this.#data.set(bytes, this.#used);
    this.#used += count * 4;
  }

  /** Zeros the last run's heap words `from` to `to` (within it): no difference from the base there. */
  clearLast(from: number, to: number): void {
    const at = this.#lastAt + 8 + from * 4 - this.#lastFrom;
    this.#data.fill(0, at, at + (to - from) * 4);
  }

  /** Starts a run of `length` bytes at heap offset `from`, or extends the last one to it; makes room for its bytes at `#used`. */
  #place(from: number, length: number): void {
    // Close to the last run: joined to it, with the zeros between (the data past `#used` is zero).
    if (this.#lastAt >= 0 && from - this.#lastTo <= JOIN_GAP) {
      this.#used += from - this.#lastTo;
      this.#lastTo = from + length;
    } else {
      this.#closeLast();
      this.#reserve(8);
      this.#lastAt = this.#used;
      this.#lastFrom = from;
      this.#lastTo = from + length;
      this.#used += 8;
    }
    this.#reserve(length);
  }

  /** Writes the last run's head, and pads its bytes to a word. */
  #closeLast(): void {
    if (this.#lastAt < 0) return;
    const view = new DataView(this.#data.buffer);
    view.setUint32(this.#lastAt, this.#lastFrom, true);
    view.setUint32(this.#lastAt + 4, this.#lastTo - this.#lastFrom, true);
    this.#used = padded(this.#used);
    this.#lastAt = -1;
  }

  #reserve(bytes: number): void {
    // Room for the bytes and for the zeros a join or padding may add before the next run.
    if (this.#used + bytes + JOIN_GAP + 8 <= this.#data.length) return;
    const grown = new Uint8Array(Math.max(this.#data.length * 2, this.#used + bytes + JOIN_GAP + 8));
    grown.set(this.#data.subarray(0, this.#used));
    this.#data = grown;
  }
}

/**
 * The patch that turns `base` into `snapshot`. It XORs `snapshot`'s heap in place (the snapshot is
 * consumed). Wasm memory never moves, so heaps line up.
 */
export function makeMemoryPatch(snapshot: Uint8Array, base: Uint8Array): Uint8Array {
  const start = heapOffset(snapshot);
  const heap = snapshot.subarray(start);
  xorInto(heap, base.subarray(heapOffset(base)));
  const builder = new PatchBuilder();
  builder.begin(snapshot.subarray(0, start), snapshot.length);
  builder.add(0, heap);
  return builder.finish();
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
  applyPatchRuns(patch, heap, baseHeap.length);
  return snapshot;
}

/**
 * XORs a patch's runs into `heap`, which holds the base's heap, and zeros from `zeroFrom` (where
 * the base's heap ends): there a run's bytes are the heap's own, and are copied rather than XORed.
 */
export function applyPatchRuns(given: Uint8Array, heap: Uint8Array, zeroFrom = heap.length): void {
  // Its runs are XORed a word at a time where they are aligned as the heap's words are: a patch
  // that crossed IPC may sit at any offset of its buffer.
  const patch = given.byteOffset % 4 === 0 ? given : given.slice();
  const view = new DataView(patch.buffer, patch.byteOffset, patch.length);
  const start = view.getUint32(4, true);
  for (let at = 8 + padded(start); at < patch.length;) {
    const from = view.getUint32(at, true);
    const count = view.getUint32(at + 4, true);
    if (from + count > heap.length) throw new Error('the memory patch does not fit its snapshot');
    const split = Math.min(Math.max(zeroFrom, from), from + count);
    xorInto(heap.subarray(from, split), patch.subarray(at + 8, at + 8 + split - from));
    heap.set(patch.subarray(at + 8 + split - from, at + 8 + count), split);
    at += 8 + padded(count);
  }
}
