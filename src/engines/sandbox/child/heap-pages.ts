/**
 * Writing a snapshot's heap into a machine's wasm memory a page at a time. A page of wasm memory
 * takes room in the process only once written, and a third of a machine's memory is zero (most
 * of the 5 MiB C stack, the unused heap): those pages are left alone where they are zero already.
 *
 * A base's heap is read from its file straight into the machine's memory, page runs at a time:
 * held whole, the base's 30 MiB stayed in every sandbox process as long as its machine lived (a
 * pooled process read it ahead). The runs are found once, when a pooled process is told its base.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { heapOffset, PatchBuilder } from '../memory-patch.ts';

const PAGE = 4096;

/** Half-open byte ranges of a heap, page-aligned (the last may end with the heap), of pages not all zero. */
export type PageRuns = Array<[number, number]>;

function zeroPage(words: Int32Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (words[i]) return false;
  return true;
}

/** The runs of `heap`'s pages that are not all zero. */
export function nonZeroRuns(bytes: Uint8Array): PageRuns {
  // Read as words, which must be aligned.
  const heap = bytes.byteOffset % 4 === 0 ? bytes : bytes.slice();
  const words = new Int32Array(heap.buffer, heap.byteOffset, heap.length >>> 2);
  const runs: PageRuns = [];
  const perPage = PAGE >>> 2;
  for (let from = 0; from < words.length; from += perPage) {
    if (zeroPage(words, from, Math.min(from + perPage, words.length))) continue;
    const end = Math.min((from + perPage) * 4, heap.length);
    const last = runs.at(-1);
    if (last && last[1] === from * 4) last[1] = end;
    else runs.push([from * 4, end]);
  }
  // A length that is not a multiple of 4 leaves its last bytes outside the words.
  const tail = heap.length & 3;
  if (tail && heap.subarray(heap.length - tail).some((byte) => byte !== 0)) {
    const start = Math.floor((heap.length - tail) / PAGE) * PAGE;
    const last = runs.at(-1);
    if (last && last[1] >= start) last[1] = heap.length;
    else runs.push([start, heap.length]);
  }
  return runs;
}

/** The parts of `ranges` outside `minus`, up to `end`; both sorted and disjoint. */
function outside(ranges: PageRuns, minus: PageRuns, end: number): PageRuns {
  const left: PageRuns = [];
  let j = 0;
  for (const [rangeFrom, rangeTo] of ranges) {
    let from = rangeFrom;
    const to = Math.min(rangeTo, end);
    while (from < to) {
      while (j < minus.length && minus[j]![1] <= from) j++;
      const next = minus[j];
      if (!next || next[0] >= to) {
        left.push([from, to]);
        break;
      }
      if (next[0] > from) left.push([from, next[0]]);
      from = next[1];
    }
  }
  return left;
}

/**
 * Puts a heap of `length` bytes into `memory`: its `runs` through `read(into, from)`, and zero
 * elsewhere. `dirty`: where `memory` may not be zero; only those of its pages outside the runs
 * are cleared, so a page that is zero in both is never touched.
 */
function writeHeap(memory: Uint8Array, length: number, runs: PageRuns, read: (into: Uint8Array, from: number) => void, dirty: PageRuns): void {
  const end = Math.min(length, memory.length);
  for (const [from, to] of outside(dirty, runs, end)) memory.fill(0, from, to);
  for (const [from, to] of runs) {
    if (from >= end) break;
    read(memory.subarray(from, Math.min(to, end)), from);
  }
}

/** Puts a whole snapshot's heap into `memory`, which may not be zero in its `dirty` runs. */
export function writeSnapshotHeap(memory: Uint8Array, heap: Uint8Array, dirty: PageRuns): void {
  writeHeap(memory, heap.length, nonZeroRuns(heap), (into, from) => into.set(heap.subarray(from, from + into.length)), dirty);
}

/** A base image's memory file, as restores read it. */
export class BaseMemory {
  private constructor(
    readonly path: string,
    private readonly heapStart: number,
    private readonly heapLength: number,
    private readonly runs: PageRuns,
  ) {}

  /** Reads the file once to find its heap's pages; `bytes` are its contents when already read. */
  static of(path: string, bytes: Uint8Array = readFileSync(path)): BaseMemory {
    const start = heapOffset(bytes);
    return new BaseMemory(path, start, bytes.length - start, nonZeroRuns(bytes.subarray(start)));
  }

  /**
   * The patch that turns the base into a snapshot with `header` and heap `heap` (a machine's live
   * memory, read and not changed), in which the `dead` ranges (sorted) count as the base's bytes.
   * Only pages that differ are looked at word by word: the rest is compared natively, a block at a
   * time, against the base's file read a run at a time (or against zeros where the base is zero).
   */
  patchOf(header: Uint8Array, heap: Uint8Array, dead: PageRuns): Uint8Array {
    const builder = new PatchBuilder();
    const differ = new HeapDiffer(heap, dead, builder);
    const fd = openSync(this.path, 'r');
    try {
      let zeroFrom = 0;
      const chunk = Buffer.allocUnsafeSlow(READ_BYTES);
      for (const [runFrom, runTo] of this.runs) {
        const to = Math.min(runTo, heap.length);
        if (runFrom >= to) break;
        differ.compare(zeroFrom, runFrom, undefined);
        for (let from = runFrom; from < to; from += READ_BYTES) {
          const length = Math.min(READ_BYTES, to - from);
          readFully(fd, chunk.subarray(0, length), this.heapStart + from, this.path);
          differ.compare(from, from + length, chunk);
        }
        zeroFrom = to;
      }
      differ.compare(zeroFrom, heap.length, undefined);
    } finally {
      closeSync(fd);
    }
    return builder.finish(header, header.length + heap.length);
  }

  /** The whole snapshot file, for the paths that need it at once. */
  bytes(): Uint8Array {
    return readFileSync(this.path);
  }

  /**
   * Puts the base's heap into `memory` (its first `memory.length` bytes; past the base's heap it
   * stays zero), which may not be zero in its `dirty` runs.
   */
  writeHeap(memory: Uint8Array, dirty: PageRuns): void {
    const fd = openSync(this.path, 'r');
    try {
      writeHeap(memory, Math.min(this.heapLength, memory.length), this.runs, (into, from) => readFully(fd, into, this.heapStart + from, this.path), dirty);
    } finally {
      closeSync(fd);
    }
  }
}

/** Reads `into.length` bytes of file `fd` from `position`. */
function readFully(fd: number, into: Uint8Array, position: number, path: string): void {
  for (let done = 0; done < into.length;) {
    const count = readSync(fd, into, done, into.length - done, position + done);
    if (count === 0) throw new Error(`the base memory file ${path} is shorter than it was`);
    done += count;
  }
}

/** The base is read this much at a time for a patch (a multiple of `BLOCK`). */
const READ_BYTES = 1 << 20;
/**
 * Blocks, then lines of a block that differs, are compared natively before words are: most of a
 * heap is as its base, and where it is not, a few words of a line differ (allocator links, a
 * counter), which a word at a time in JavaScript would be slow to find.
 */
const BLOCK = 16 << 10;
const LINE = 512;
const ZEROS = Buffer.alloc(READ_BYTES);

/**
 * Compares a live heap with its base, part by part in heap order, and adds the runs of words that
 * differ to a patch, leaving out dead memory. Heaps are whole wasm memories: word-aligned, and
 * their parts are read as words.
 */
class HeapDiffer {
  readonly #heap: Int32Array;
  /** The heap as a Buffer, whose `compare` takes ranges and so allocates nothing. */
  readonly #bytes: Buffer;
  readonly #dead: PageRuns;
  /** The first dead range that may still lie ahead. */
  #nextDead = 0;
  #xor = new Int32Array(BLOCK >>> 2);

  constructor(
    heap: Uint8Array,
    dead: PageRuns,
    private readonly builder: PatchBuilder,
  ) {
    this.#heap = new Int32Array(heap.buffer, heap.byteOffset, heap.length >>> 2);
    this.#bytes = Buffer.from(heap.buffer, heap.byteOffset, heap.length);
    // Whole words only: a word that is partly alive is compared.
    this.#dead = dead.map(([from, to]): [number, number] => [(from + 3) & ~3, to & ~3]).filter(([from, to]) => from < to);
  }

  /** The heap from `from` to `to` (word-aligned) against `base`, the base's bytes there from its start (zeros when undefined). */
  compare(from: number, to: number, base: Buffer | undefined): void {
    const was = base ?? ZEROS;
    const words = new Int32Array(was.buffer, was.byteOffset, was.length >>> 2);
    for (let block = from; block < to; block += BLOCK) {
      const end = Math.min(block + BLOCK, to);
      // Where `was` starts in the heap: the base's bytes from `from`; zeros anywhere.
      const offset = base ? from : block;
      if (this.#same(block, end, was, offset)) continue;
      for (let line = block; line < end; line += LINE) {
        const lineEnd = Math.min(line + LINE, end);
        if (!this.#same(line, lineEnd, was, offset)) this.#words(line >>> 2, lineEnd >>> 2, words, offset >>> 2);
      }
    }
  }

  /** The heap from `from` to `to` is as `was` there, whose byte 0 is heap byte `wasAt`. */
  #same(from: number, to: number, was: Buffer, wasAt: number): boolean {
    return this.#bytes.compare(was, from - wasAt, to - wasAt, from, to) === 0;
  }

  /** Heap words `from` to `to` against `was`, whose word 0 is heap word `wasAt`. */
  #words(from: number, to: number, was: Int32Array, wasAt: number): void {
    const heap = this.#heap;
    for (let i = from; i < to; i++) {
      if (heap[i] === was[i - wasAt]) continue;
      const dead = this.#deadAt(i * 4);
      if (dead) {
        i = dead / 4 - 1;
        continue;
      }
      // A run of differing words, up to an equal word or dead memory.
      const deadFrom = (this.#dead[this.#nextDead]?.[0] ?? Infinity) / 4;
      let end = i + 1;
      while (end < to && end < deadFrom && heap[end] !== was[end - wasAt]) end++;
      if (this.#xor.length < end - i) this.#xor = new Int32Array(end - i);
      for (let j = i; j < end; j++) this.#xor[j - i] = heap[j]! ^ was[j - wasAt]!;
      this.builder.run(i * 4, new Uint8Array(this.#xor.buffer, 0, (end - i) * 4));
      i = end;
    }
  }

  /** Where the dead range holding byte `at` ends, if one does. */
  #deadAt(at: number): number | undefined {
    while (this.#nextDead < this.#dead.length && this.#dead[this.#nextDead]![1] <= at) this.#nextDead++;
    const next = this.#dead[this.#nextDead];
    return next && next[0] <= at ? next[1] : undefined;
  }
}
