import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BaseMemory, DifferingLines, nonZeroRuns, writeSnapshotHeap } from '../../src/engines/sandbox/child/heap-pages.ts';
import { applyMemoryPatch, makeMemoryPatch } from '../../src/engines/sandbox/memory-patch.ts';

const PAGE = 4096;

/** A heap of `pages` pages, with `byte` written at the given offsets. */
function heapWith(pages: number, offsets: number[], byte = 7): Uint8Array {
  const heap = new Uint8Array(pages * PAGE);
  for (const at of offsets) heap[at] = byte;
  return heap;
}

/** A Pyodide-style snapshot: 8 bytes naming where the heap starts, a header, then the heap. */
function snapshotOf(header: Uint8Array, heap: Uint8Array): Uint8Array {
  const start = 8 + header.length;
  const snapshot = new Uint8Array(start + heap.length);
  new DataView(snapshot.buffer).setUint32(4, start, true);
  snapshot.set(header, 8);
  snapshot.set(heap, start);
  return snapshot;
}

describe('heap pages', () => {
  it('finds the runs of pages that are not zero, joining neighbours', () => {
    const heap = heapWith(8, [0, PAGE + 5, 4 * PAGE + 100, 7 * PAGE + PAGE - 1]);
    assert.deepEqual(nonZeroRuns(heap), [
      [0, 2 * PAGE],
      [4 * PAGE, 5 * PAGE],
      [7 * PAGE, 8 * PAGE],
    ]);
    assert.deepEqual(nonZeroRuns(new Uint8Array(3 * PAGE)), []);
  });

  it('counts the last bytes of a heap whose length is not a multiple of four', () => {
    const heap = new Uint8Array(2 * PAGE + 3);
    heap[2 * PAGE + 2] = 1;
    assert.deepEqual(nonZeroRuns(heap), [[2 * PAGE, 2 * PAGE + 3]]);
  });

  it('writes a heap exactly, clearing what the memory held where the heap is zero', () => {
    const heap = heapWith(6, [10, 3 * PAGE + 9]);
    const memory = heapWith(8, [PAGE + 1, 2 * PAGE + 2, 3 * PAGE + 3, 7 * PAGE], 9);
    writeSnapshotHeap(memory, heap, nonZeroRuns(memory));
    assert.deepEqual(memory.subarray(0, heap.length), heap);
    // Past the heap, the memory is not the heap's to change.
    assert.equal(memory[7 * PAGE], 9);
  });

  it('clears only the pages it is told may not be zero', () => {
    const heap = new Uint8Array(4 * PAGE);
    const memory = heapWith(4, [PAGE, 3 * PAGE], 9);
    writeSnapshotHeap(memory, heap, [[PAGE, 2 * PAGE]]);
    assert.equal(memory[PAGE], 0);
    assert.equal(memory[3 * PAGE], 9, 'a page outside the dirty runs is taken to be zero already, and left alone');
  });

  it('reads a base heap from its file into memory, runs at a time', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perennial-heap-pages-'));
    try {
      const heap = heapWith(16, [0, 5 * PAGE + 17, 6 * PAGE, 15 * PAGE + 4095], 3);
      const path = join(dir, 'base.snapshot');
      await writeFile(path, snapshotOf(new Uint8Array([1, 2, 3, 4]), heap));
      const base = BaseMemory.of(path);
      const memory = heapWith(20, [2 * PAGE, 19 * PAGE], 8);
      base.writeHeap(memory.subarray(0, heap.length), nonZeroRuns(memory));
      assert.deepEqual(memory.subarray(0, heap.length), heap);
      assert.equal(memory[19 * PAGE], 8, 'past the base heap the memory is left as it is');
      assert.deepEqual(new Uint8Array(base.bytes()), snapshotOf(new Uint8Array([1, 2, 3, 4]), heap));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('makes the patch of a live heap on its base file, dead memory counted as the base', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perennial-heap-pages-'));
    try {
      // A base of 300 pages with zero pages among its runs; a live heap grown past it.
      const base = new Uint8Array(300 * PAGE);
      for (let i = 0; i < base.length; i += 13) if (Math.floor(i / PAGE) % 7 !== 3) base[i] = (i * 17) & 0xff;
      const header = new Uint8Array([9, 8, 7, 6, 5, 4, 3, 2]);
      const path = join(dir, 'base.snapshot');
      await writeFile(path, snapshotOf(header, base));
      const live = new Uint8Array(320 * PAGE);
      live.set(base);
      // Scattered words, a long run across blocks, bytes in a zero page, and past the base.
      for (let i = 0; i < 400; i++) live[(i * 104_729) % base.length]! ^= 0x5a;
      live.fill(1, 40 * PAGE + 6, 80 * PAGE + 2);
      live[3 * PAGE + 100] = 4;
      live[310 * PAGE + 7] = 2;
      const liveHeader = new Uint8Array([1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144]);
      const memory = BaseMemory.of(path);

      // What it restores is the live heap; where the base is zero, a differing line is kept whole.
      const whole = makeMemoryPatch(snapshotOf(liveHeader, live), snapshotOf(header, base));
      const made = memory.differingLines(live).patch(snapshotOf(liveHeader, new Uint8Array()), []);
      assert.deepEqual(applyMemoryPatch(made, snapshotOf(header, base)), snapshotOf(liveHeader, live));
      assert.ok(made.length <= whole.length + 64 * 512, `${made.length} bytes against the host's ${whole.length}`);

      // Dead memory: garbage there is no difference; the words around it are.
      const dead: Array<[number, number]> = [
        [100 * PAGE + 8, 100 * PAGE + 200],
        [250 * PAGE, 252 * PAGE],
        [305 * PAGE, 306 * PAGE],
      ];
      const withGarbage = live.slice();
      for (const [from, to] of dead) withGarbage.fill(0xee, from, to);
      const expected = live.slice();
      for (const [from, to] of dead)
        expected.set(
          new Uint8Array(to - from).map((_, i) => base[from + i] ?? 0),
          from,
        );
      const patch = memory.differingLines(withGarbage).patch(snapshotOf(liveHeader, new Uint8Array()), dead);
      assert.deepEqual(applyMemoryPatch(patch, snapshotOf(header, base)), snapshotOf(liveHeader, expected));
      assert.ok(
        patch.length <= makeMemoryPatch(snapshotOf(liveHeader, expected), snapshotOf(header, base)).length + 64 * 512,
        'no bytes of the dead memory in it',
      );

      // One differ serves snapshot after snapshot (a sandbox keeps one), whatever the last one held.
      const kept = new DifferingLines();
      const everywhere = live.map((byte, i) => byte ^ (i % 3 === 0 ? 0x11 : 0));
      // Words two apart: runs joined across the zeros between them, which must be zeros.
      const joined = live.map((byte, i) => byte ^ (i >= 200 * PAGE && i < 210 * PAGE && i % 12 === 0 ? 0x77 : 0));
      for (const heap of [everywhere, live, joined, withGarbage, joined])
        assert.deepEqual(
          applyMemoryPatch(memory.differingLines(heap, kept).patch(snapshotOf(liveHeader, new Uint8Array()), []), snapshotOf(header, base)),
          snapshotOf(liveHeader, heap),
        );

      // Compared only within the ranges given: what lies outside them counts as the base's.
      const within: Array<[number, number]> = [
        [0, 30 * PAGE + 12],
        [90 * PAGE, 300 * PAGE],
      ];
      const outside = live.slice();
      outside.set(base.subarray(30 * PAGE + 12, 90 * PAGE), 30 * PAGE + 12);
      outside.fill(0, 300 * PAGE);
      assert.deepEqual(
        applyMemoryPatch(memory.differingLines(live, undefined, within).patch(snapshotOf(liveHeader, new Uint8Array()), []), snapshotOf(header, base)),
        snapshotOf(liveHeader, outside),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
