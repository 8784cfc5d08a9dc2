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
import { heapOffset } from '../memory-patch.ts';

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
      writeHeap(
        memory,
        Math.min(this.heapLength, memory.length),
        this.runs,
        (into, from) => {
          for (let done = 0; done < into.length;) {
            const count = readSync(fd, into, done, into.length - done, this.heapStart + from + done);
            if (count === 0) throw new Error(`the base memory file ${this.path} is shorter than it was`);
            done += count;
          }
        },
        dirty,
      );
    } finally {
      closeSync(fd);
    }
  }
}
