import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blankDeadMemory, deadRanges, memoryInUse, type MemoryLayout } from '../../src/engines/sandbox/child/dead-memory.ts';

const HEADER = 32;
const BREAK_ADDRESS = 16;
const HEAP_BASE = 512;

/**
 * A dlmalloc heap laid out as Emscripten's is: chunks end to end from the heap base, each with
 * `prev_foot` and `head` (size | 1 when the previous chunk is in use | 2 when this one is), free
 * chunks' sizes repeated in the next `prev_foot`, then the top chunk and the 40-byte segment
 * record, which ends at the break. Below the heap, a C stack from 64 up to the heap base.
 */
function heap(): { memory: Uint8Array; layout: MemoryLayout; chunks: Record<string, number> } {
  const memory = new Uint8Array(4096);
  for (let i = 0; i < memory.length; i++) memory[i] = (i * 7 + 3) & 0xff;
  const view = new DataView(memory.buffer);
  const sizes: Array<[string, number, boolean]> = [
    ['a', 32, true],
    ['smallFree', 48, false],
    ['c', 24, true],
    ['largeFree', 512, false],
    ['e', 40, true],
    ['top', 256, false],
  ];
  const chunks: Record<string, number> = {};
  let at = HEAP_BASE;
  let previousInUse = true;
  for (const [name, size, inUse] of sizes) {
    chunks[name] = at;
    view.setUint32(at + 4, size | (previousInUse ? 1 : 0) | (inUse ? 2 : 0), true);
    if (!inUse && name !== 'top') view.setUint32(at + size, size, true);
    previousInUse = inUse;
    at += size;
  }
  view.setUint32(at + 4, 40, true);
  view.setUint32(BREAK_ADDRESS, at + 40, true);
  const layout: MemoryLayout = {
    heapBase: HEAP_BASE,
    breakAddress: BREAK_ADDRESS,
    stackEnd: 64,
    stackPointer: 256,
    freeChunks: 3,
    freeBytes: 48 + 512 + 256 + 40,
  };
  return { memory, layout, chunks };
}

/** A Pyodide-shaped snapshot: a header whose second word is the memory's offset, then the memory. */
function snapshotOf(memory: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(HEADER + memory.length);
  new DataView(bytes.buffer).setUint32(4, HEADER, true);
  bytes.set(memory, HEADER);
  return bytes;
}

describe('dead memory of a machine', () => {
  it('is the free chunks past their links, the top chunk past its links, and the stack below its pointer', () => {
    const { memory, layout, chunks } = heap();
    assert.deepEqual(deadRanges(memory, layout), [
      [chunks.smallFree! + 16, chunks.smallFree! + 48],
      [chunks.largeFree! + 32, chunks.largeFree! + 512],
      [chunks.top! + 32, chunks.top! + 256],
      [64, 256],
    ]);
  });

  it('leaves, by the layout alone, the stack below its pointer and what lies past the break', () => {
    const { memory, layout, chunks } = heap();
    assert.deepEqual(memoryInUse(memory, layout), [
      [0, 64],
      [256, chunks.top! + 256 + 40],
    ]);
    assert.deepEqual(memoryInUse(memory, { ...layout, stackPointer: HEAP_BASE + 8 }), [[0, memory.length]], 'a stack pointer inside the heap: all of it');
    new DataView(memory.buffer).setUint32(BREAK_ADDRESS, memory.length + 8, true);
    assert.deepEqual(memoryInUse(memory, layout), [[0, memory.length]], 'a break past the memory: all of it');
  });

  it('takes the base bytes there, and nowhere else', () => {
    const { memory, layout } = heap();
    const base = snapshotOf(new Uint8Array(memory.length).fill(0xee));
    const snapshot = snapshotOf(memory);
    const blanked = blankDeadMemory(snapshot, base, layout);
    const ranges = deadRanges(memory, layout)!;
    assert.equal(
      blanked,
      ranges.reduce((sum, [from, to]) => sum + to - from, 0),
    );
    const dead = (address: number) => ranges.some(([from, to]) => address >= from && address < to);
    for (let address = 0; address < memory.length; address++) {
      assert.equal(snapshot[HEADER + address], dead(address) ? 0xee : memory[address], `byte at ${address}`);
    }
  });

  it('is zero in a snapshot without a base (a base image itself)', () => {
    const { memory, layout } = heap();
    const snapshot = snapshotOf(memory);
    blankDeadMemory(snapshot, undefined, layout);
    const ranges = deadRanges(memory, layout)!;
    for (const [from, to] of ranges) assert.ok(snapshot.subarray(HEADER + from, HEADER + to).every((b) => b === 0));
    assert.deepEqual(snapshot.subarray(HEADER, HEADER + 64), memory.subarray(0, 64));
  });

  const damaged: Array<[string, (memory: DataView, layout: MemoryLayout, chunks: Record<string, number>) => void]> = [
    ['malloc counts another number of free chunks', (_, layout) => layout.freeChunks++],
    ['malloc counts other free bytes', (_, layout) => (layout.freeBytes -= 8)],
    ['a size runs past the break', (view, _, chunks) => view.setUint32(chunks.c! + 4, 4000 | 2, true)],
    ['a size is below the smallest chunk', (view, _, chunks) => view.setUint32(chunks.c! + 4, 8 | 2, true)],
    ['a chunk says its neighbour is in use when it is free', (view, _, chunks) => view.setUint32(chunks.c! + 4, 24 | 3, true)],
    ['a free chunk is not repeated in the next one', (view, _, chunks) => view.setUint32(chunks.largeFree! + 512, 8, true)],
    ['the segment record is missing', (view, _, chunks) => view.setUint32(chunks.top! + 256 + 4, 48, true)],
    ['the break lies outside the memory', (view) => view.setUint32(BREAK_ADDRESS, 1 << 20, true)],
  ];
  for (const [what, damage] of damaged) {
    it(`is not touched when ${what}`, () => {
      const { memory, layout, chunks } = heap();
      damage(new DataView(memory.buffer), layout, chunks);
      assert.equal(deadRanges(memory, layout), undefined);
      const snapshot = snapshotOf(memory);
      assert.equal(blankDeadMemory(snapshot, snapshotOf(new Uint8Array(memory.length)), layout), 0);
      assert.deepEqual(snapshot, snapshotOf(memory));
    });
  }
});
