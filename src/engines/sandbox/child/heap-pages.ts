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

/** A page of memory, as the OS maps it: the unit of zero pages and of faults. */
export const PAGE = 4096;

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

/** The pages in `a` or in `b` (each sorted and disjoint), as runs. */
export function unionRuns(a: PageRuns, b: PageRuns): PageRuns {
  const union: PageRuns = [];
  for (const [from, to] of [...a, ...b].sort((x, y) => x[0] - y[0])) {
    const last = union.at(-1);
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else union.push([from, to]);
  }
  return union;
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

/** What is known of a base's memory file once it was read: plain data, which crosses to a thread. */
export interface BaseMemoryLayout {
  path: string;
  heapStart: number;
  heapLength: number;
  /** Where the base's heap is not zero. */
  runs: PageRuns;
}

/** A base image's memory file, as restores read it. */
export class BaseMemory implements BaseMemoryLayout {
  readonly path: string;
  readonly heapStart: number;
  readonly heapLength: number;
  readonly runs: PageRuns;
  /** What a read says where the file ends before it should. */
  readonly #short: string;

  constructor({ path, heapStart, heapLength, runs }: BaseMemoryLayout) {
    this.path = path;
    this.#short = `the base memory file ${path} is shorter than it was`;
    this.heapStart = heapStart;
    this.heapLength = heapLength;
    this.runs = runs;
  }

  /** Reads the file once to find its heap's pages; `bytes` are its contents when already read. */
  static of(path: string, bytes: Uint8Array = readFileSync(path)): BaseMemory {
    const heapStart = heapOffset(bytes);
    return new BaseMemory({ path, heapStart, heapLength: bytes.length - heapStart, runs: nonZeroRuns(bytes.subarray(heapStart)) });
  }

  /** The layout alone, for a thread that reads the same file. */
  layout(): BaseMemoryLayout {
    return { path: this.path, heapStart: this.heapStart, heapLength: this.heapLength, runs: this.runs };
  }

  /**
   * The lines of `heap` (a machine's live memory, read and not changed) that differ from the base,
   * with the base's bytes there, looking only `within` those ranges (sorted; word-aligned): what
   * lies outside them counts as the base's. Compared natively, a block and then a line at a time: most of a heap is
   * as its base, and where it is not, a few words of a line differ (allocator links, a counter).
   */
  differingLines(heap: Uint8Array, lines = new DifferingLines(), within: PageRuns = [[0, heap.length]]): DifferingLines {
    lines.reset(heap);
    this.#against(heap.length, within, (from, to, base) => lines.compare(from, to, base));
    return lines;
  }

  /**
   * Calls `visit` for each part of a heap of `length` bytes `within` those ranges, in order, with
   * the base's bytes there (from `from`), read from its file a run at a time; without them where
   * the base is zero.
   */
  #against(length: number, within: PageRuns, visit: (from: number, to: number, base: Buffer | undefined) => void): void {
    const fd = openSync(this.path, 'r');
    try {
      const chunk = Buffer.allocUnsafeSlow(READ_BYTES);
      let r = 0;
      for (const [inFrom, inTo] of within) {
        const end = Math.min(inTo, length);
        for (let at = inFrom; at < end;) {
          while (r < this.runs.length && this.runs[r]![1] <= at) r++;
          const run = this.runs[r];
          const zerosTo = run ? Math.min(Math.max(run[0], at), end) : end;
          if (zerosTo > at) {
            visit(at, zerosTo, undefined);
            at = zerosTo;
            continue;
          }
          const to = Math.min(run![1], end);
          for (let from = at; from < to; from += READ_BYTES) {
            const size = Math.min(READ_BYTES, to - from);
            readFully(fd, chunk.subarray(0, size), this.heapStart + from, this.#short);
            visit(from, from + size, chunk.subarray(0, size));
          }
          at = to;
        }
      }
    } finally {
      closeSync(fd);
    }
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
      writeHeap(memory, Math.min(this.heapLength, memory.length), this.runs, (into, from) => readFully(fd, into, this.heapStart + from, this.#short), dirty);
    } finally {
      closeSync(fd);
    }
  }
}

/** Reads `into.length` bytes of file `fd` from `position`; `short`: what to say where the file ends before. */
export function readFully(fd: number, into: Uint8Array, position: number, short: string): void {
  for (let done = 0; done < into.length;) {
    const count = readSync(fd, into, done, into.length - done, position + done);
    if (count === 0) throw new Error(short);
    done += count;
  }
}

/** The base is read this much at a time for a patch (a multiple of `BLOCK`). */
const READ_BYTES = 1 << 20;
/**
 * Blocks, then lines of a block that differs, then pieces of a line that differs, are compared
 * natively before words are: JavaScript code that runs once a snapshot runs before V8 optimizes it.
 */
const BLOCK = 16 << 10;
const LINE = 512;
const PIECE_WORDS = 8;
const ZEROS = Buffer.alloc(BLOCK);
/** Room kept from one snapshot to the next; more (a machine that differs from its base in many MiB) is let go. */
const KEPT_BYTES = 1 << 20;

/**
 * Where a live heap differs from its base, a line at a time, with the base's bytes of those lines:
 * found in one pass over the heap, before anything else reads it, then turned into a patch once
 * its dead memory is known. Heaps are whole wasm memories: word-aligned, and read as words.
 *
 * A sandbox keeps one and uses it again at every snapshot: V8 drops the optimized code of these
 * loops when the last object of the shapes it relied on dies, and a snapshot's work would then
 * run unoptimized every time (three times slower, measured).
 */
export class DifferingLines {
  #heap: Uint8Array = new Uint8Array(0);
  /** The heap as a Buffer, whose `compare` takes ranges and so allocates nothing. */
  #bytes: Buffer = Buffer.alloc(0);
  /** Each line's heap offset, and its length (the last may be short). */
  readonly #lines: number[] = [];
  readonly #lengths: number[] = [];
  /** Where each line's base bytes start in `#base`; -1 where the base is zero (not kept). */
  readonly #baseAt: number[] = [];
  /** The base's bytes of each line, end to end. */
  #base = Buffer.allocUnsafeSlow(64 << 10);
  #used = 0;
  readonly #builder = new PatchBuilder();

  /** Starts over on `heap`, keeping the room the last heap's lines took. */
  reset(heap: Uint8Array): void {
    if (heap.buffer !== this.#heap.buffer || heap.byteOffset !== this.#heap.byteOffset || heap.length !== this.#heap.length) {
      this.#heap = heap;
      this.#bytes = Buffer.from(heap.buffer, heap.byteOffset, heap.length);
    }
    this.#lines.length = this.#lengths.length = this.#baseAt.length = 0;
    this.#used = 0;
  }

  /** The heap from `from` to `to` (word-aligned) against `base`, the base's bytes there from its start (zeros when undefined). */
  compare(from: number, to: number, base: Buffer | undefined): void {
    const was = base ?? ZEROS;
    for (let block = from; block < to; block += BLOCK) {
      const end = Math.min(block + BLOCK, to);
      // Where `was` starts in the heap: the base's bytes from `from`; zeros anywhere.
      const offset = base ? from : block;
      if (this.#same(block, end, was, offset)) continue;
      for (let line = block; line < end; line += LINE) {
        const lineEnd = Math.min(line + LINE, end);
        if (!this.#same(line, lineEnd, was, offset)) this.#keep(line, lineEnd - line, base && was.subarray(line - offset, lineEnd - offset));
      }
    }
  }

  /**
   * The patch that turns the base into a snapshot with `header` and this heap, in which the `dead`
   * ranges (sorted) count as the base's bytes.
   */
  patch(header: Uint8Array, dead: PageRuns): Uint8Array {
    const builder = this.#builder;
    // Room for every differing line whole, with a run's head each: what a patch takes at most, short of joins' gaps.
    builder.begin(
      header,
      header.length + this.#heap.length,
      this.#lengths.reduce((sum, length) => sum + length + 8, 8 + header.length + 4),
    );
    const heap = new Int32Array(this.#heap.buffer, this.#heap.byteOffset, this.#heap.length >>> 2);
    const base = new Int32Array(this.#base.buffer, this.#base.byteOffset, this.#used >>> 2);
    // Whole words only: a word that is partly alive is compared.
    const deadWords = dead.map(([from, to]): [number, number] => [(from + 3) >>> 2, to >>> 2]).filter(([from, to]) => from < to);
    let nextDead = 0;
    for (let l = 0; l < this.#lines.length; l++) {
      const first = this.#lines[l]! >>> 2;
      let end = first + (this.#lengths[l]! >>> 2);
      if (this.#baseAt[l]! < 0) {
        // Where the base is zero, the difference is the line itself, copied whole (its zero words
        // too: zstd makes nothing of them), and its dead memory zero, as the base has it. The
        // lines that follow it there are copied with it: memory grown past the base (a large
        // object) is tens of MiB of such lines, which one at a time took 200 ms for 80 MB.
        while (l + 1 < this.#lines.length && this.#baseAt[l + 1]! < 0 && this.#lines[l + 1]! >>> 2 === end) end += this.#lengths[++l]! >>> 2;
        builder.copyRun(first, heap, end - first);
        while (nextDead < deadWords.length && deadWords[nextDead]![1] <= first) nextDead++;
        for (let d = nextDead; d < deadWords.length && deadWords[d]![0] < end; d++)
          builder.clearLast(Math.max(first, deadWords[d]![0]), Math.min(end, deadWords[d]![1]));
        continue;
      }
      // Heap word `w` is base word `w - shift`.
      const shift = first - (this.#baseAt[l]! >>> 2);
      // Words before `next` are in a run already.
      let next = first;
      for (let piece = first; piece < end; piece += PIECE_WORDS) {
        const pieceEnd = Math.min(piece + PIECE_WORDS, end);
        if (next >= pieceEnd) continue;
        if (next <= piece && this.#bytes.compare(this.#base, (piece - shift) * 4, (pieceEnd - shift) * 4, piece * 4, pieceEnd * 4) === 0) continue;
        for (let i = Math.max(piece, next); i < pieceEnd; i++) {
          if (heap[i] === base[i - shift]) continue;
          while (nextDead < deadWords.length && deadWords[nextDead]![1] <= i) nextDead++;
          const deadFrom = deadWords[nextDead]?.[0] ?? Infinity;
          if (deadFrom <= i) {
            i = Math.min(deadWords[nextDead]![1], end) - 1;
            continue;
          }
          // A run of differing words, up to an equal word, dead memory or the line's end.
          let runEnd = i + 1;
          while (runEnd < end && runEnd < deadFrom && heap[runEnd] !== base[runEnd - shift]) runEnd++;
          builder.xorRun(i, heap, base, shift, runEnd - i);
          i = runEnd;
          next = runEnd + 1;
        }
      }
    }
    const patch = builder.finish();
    // What a large difference took is given back: the machine keeps its memory to its own.
    if (this.#base.length > KEPT_BYTES) this.#base = Buffer.allocUnsafeSlow(64 << 10);
    builder.shrink(KEPT_BYTES);
    return patch;
  }

  /** The heap from `from` to `to` is as `was` there, whose byte 0 is heap byte `wasAt`. */
  #same(from: number, to: number, was: Buffer, wasAt: number): boolean {
    return this.#bytes.compare(was, from - wasAt, to - wasAt, from, to) === 0;
  }

  #keep(line: number, length: number, base: Uint8Array | undefined): void {
    this.#lines.push(line);
    this.#lengths.push(length);
    if (!base) {
      this.#baseAt.push(-1);
      return;
    }
    this.#baseAt.push(this.#used);
    if (this.#used + base.length > this.#base.length) {
      const grown = Buffer.allocUnsafeSlow(this.#base.length * 2);
      this.#base.copy(grown, 0, 0, this.#used);
      this.#base = grown;
    }
    this.#base.set(base, this.#used);
    this.#used += base.length;
  }
}
