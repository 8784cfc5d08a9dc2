/**
 * The parts of a Pyodide machine's memory that nothing will read again: free malloc chunks past
 * their links, and the C stack below its pointer. They hold whatever was last freed there, so
 * every restore, which allocates and frees a little, leaves them different from the base image,
 * and a machine's patch on its base grew at every swap. A snapshot takes the base's bytes in
 * those places, so they cost nothing in the patch; the machine itself is left untouched.
 *
 * Pyodide's CPython is built without pymalloc, so every Python object lives in a chunk of
 * Emscripten's dlmalloc. Its chunks lie end to end from the heap base to the break: a word
 * `prev_foot`, which belongs to the chunk before unless that one is free, then `head`, the size
 * with bit 0 set when the chunk before is in use and bit 1 when this one is. A free chunk keeps
 * its bin links right after `head` (two words, six in a tree bin for sizes from 256 bytes) and
 * its size again in the next chunk's `prev_foot`; everything else in it is dead. The last chunk,
 * `top`, is free and followed by the heap segment's record, whose `head` is its own size. A walk
 * that does not check out against all of this, and against dlmalloc's own totals, blanks nothing.
 */
import { heapOffset } from '../memory-patch.ts';

/** What is read of Emscripten's memory management to find the dead memory. */
export interface MemoryAccess {
  HEAPU32: Uint32Array;
  ___heap_base: number;
  _emscripten_get_sbrk_ptr(): number;
  _emscripten_stack_get_end(): number;
  _mallinfo(into: number): void;
  stackSave(): number;
  stackAlloc(bytes: number): number;
  stackRestore(pointer: number): void;
}

/** Where things are in a machine's memory, read from its instance when the snapshot is taken. */
export interface MemoryLayout {
  /** Where malloc's first chunk begins (Emscripten's `__heap_base`). */
  heapBase: number;
  /** The address of the word holding the current break, where the last chunk ends. */
  breakAddress: number;
  /** The C stack grows down to here; what lies below the stack pointer is dead. */
  stackEnd: number;
  stackPointer: number;
  /** dlmalloc's own count of free chunks and their bytes (the top chunk included), from mallinfo. */
  freeChunks: number;
  freeBytes: number;
}

/** The layout of a live instance's memory, to check and walk its snapshot with. */
export function memoryLayout(module: MemoryAccess): MemoryLayout {
  const stackPointer = module.stackSave();
  try {
    const info = module.stackAlloc(40);
    module._mallinfo(info);
    // struct mallinfo: arena, ordblks (free chunks), smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks (free bytes), keepcost
    const words = module.HEAPU32.subarray(info >>> 2, (info >>> 2) + 10);
    return {
      heapBase: module.___heap_base,
      breakAddress: module._emscripten_get_sbrk_ptr(),
      stackEnd: module._emscripten_stack_get_end(),
      stackPointer,
      freeChunks: words[1]!,
      freeBytes: words[8]!,
    };
  } finally {
    module.stackRestore(stackPointer);
  }
}

const ALIGNMENT = 8;
const MIN_CHUNK = 16;
const PREVIOUS_IN_USE = 1;
const IN_USE = 2;
const FLAGS = 7;
/** Free chunks from this size sit in tree bins, with four more words of links. */
const TREE_SIZE = 256;
/** The heap segment's record after the top chunk (dlmalloc's TOP_FOOT_SIZE on wasm32). */
const TOP_FOOT = 40;

/** Half-open address ranges of dead memory, or undefined when the heap is not as expected. */
export function deadRanges(memory: Uint8Array, layout: MemoryLayout): Array<[number, number]> | undefined {
  // Read as words (wasm memory is little-endian, as every host Perennial runs on), aligned.
  const aligned = memory.byteOffset % 4 === 0 ? memory : memory.slice();
  const words = new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.length >>> 2);
  if (layout.breakAddress + 4 > memory.length || layout.breakAddress % 4) return undefined;
  const end = words[layout.breakAddress >>> 2]!;
  if (end > memory.length) return undefined;
  const ranges: Array<[number, number]> = [];
  const misaligned = (layout.heapBase + 8) % ALIGNMENT;
  let chunk = layout.heapBase + (misaligned ? ALIGNMENT - misaligned : 0);
  let previousFree = false;
  let freeChunks = 0;
  let freeBytes = 0;
  for (let first = true; chunk < end; first = false) {
    if (chunk + 8 > end) return undefined;
    const head = words[(chunk + 4) >>> 2]!;
    if (chunk + TOP_FOOT === end) {
      // The segment record, after the top chunk; mallinfo counts it as free.
      if (head !== TOP_FOOT || !previousFree) return undefined;
      freeBytes += TOP_FOOT;
      chunk = end;
      break;
    }
    const size = head & ~FLAGS;
    if (size < MIN_CHUNK || chunk + size > end) return undefined;
    if (!first && Boolean(head & PREVIOUS_IN_USE) === previousFree) return undefined;
    previousFree = !(head & IN_USE);
    if (previousFree) {
      const next = chunk + size;
      // A free chunk's size is repeated at the start of the next one; the top chunk's is not.
      if (next + TOP_FOOT < end && words[next >>> 2] !== size) return undefined;
      freeChunks++;
      freeBytes += size;
      const dead = chunk + 8 + (size >= TREE_SIZE ? 24 : 8);
      if (dead < next) ranges.push([dead, next]);
    }
    chunk += size;
  }
  if (chunk !== end) return undefined;
  if (freeChunks !== layout.freeChunks || freeBytes !== layout.freeBytes) return undefined;
  if (layout.stackEnd < layout.stackPointer && layout.stackPointer <= layout.heapBase) ranges.push([layout.stackEnd, layout.stackPointer]);
  return ranges;
}

/**
 * Where a machine's memory may hold anything alive, by its layout alone: below the C stack, the
 * stack in use, and the heap up to the break. The rest (the stack below its pointer, a third of
 * a trivial machine's memory, and what lies past the break) is dead, and a snapshot takes the
 * base's bytes there without comparing them. The whole memory when the layout does not add up.
 */
export function memoryInUse(memory: Uint8Array, layout: MemoryLayout): Array<[number, number]> {
  const whole: Array<[number, number]> = [[0, memory.length]];
  if (layout.breakAddress % 4 || layout.breakAddress + 4 > memory.length) return whole;
  const end = new DataView(memory.buffer, memory.byteOffset + layout.breakAddress, 4).getUint32(0, true);
  const { stackEnd, stackPointer, heapBase } = layout;
  if (!(stackEnd % 4 === 0 && stackPointer % 4 === 0 && stackEnd <= stackPointer && stackPointer <= heapBase && heapBase <= end && end <= memory.length))
    return whole;
  return [
    [0, stackEnd],
    [stackPointer, (end + 3) & ~3],
  ];
}

/**
 * Copies the base's bytes over the dead memory of `snapshot` (both Pyodide snapshots), or zeros
 * without a base: a base image's dead memory is zero, which a restore need not write at all.
 * Answers how many bytes were blanked: 0 when the walk did not check out, and the snapshot is
 * left as it was.
 */
export function blankDeadMemory(snapshot: Uint8Array, base: Uint8Array | undefined, layout: MemoryLayout): number {
  const heap = snapshot.subarray(heapOffset(snapshot));
  const baseHeap = base?.subarray(heapOffset(base));
  const ranges = deadRanges(heap, layout);
  if (!ranges) return 0;
  let blanked = 0;
  for (const [from, to] of ranges) {
    const until = Math.min(to, baseHeap?.length ?? heap.length);
    if (from >= until) continue;
    if (baseHeap) heap.set(baseHeap.subarray(from, until), from);
    else heap.fill(0, from, until);
    blanked += until - from;
  }
  return blanked;
}
