import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeImage, encodeImage, ImageVersionError, readImage, readImageHeader } from '../../src/engines/sandbox/machine-image-file.ts';
import { applyMemoryPatch, makeMemoryPatch } from '../../src/engines/sandbox/memory-patch.ts';
import type { MachineImage } from '../../src/engines/sandbox/protocol.ts';

/** A Pyodide-shaped snapshot: a header whose second word is the heap's offset, then the heap. */
function snapshot(heapOffset: number, heap: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(heapOffset + heap.length);
  new DataView(bytes.buffer).setUint32(4, heapOffset, true);
  bytes.set(heap, heapOffset);
  return bytes;
}

function heapOf(size: number, seed: number): Uint8Array {
  const heap = new Uint8Array(size);
  for (let i = 0; i < size; i += 97) heap[i] = (i * seed) & 0xff;
  return heap;
}

const meta = { pyodideVersion: '0.29.0', dynlibs: [], loadedPackages: {}, tableLength: 11803 };

describe('machine image files', () => {
  const base = snapshot(64, heapOf(1 << 20, 3));

  it('round-trips a snapshot stored as an XOR delta against its base, and is small when little changed', async () => {
    const heap = heapOf(1 << 20, 3);
    heap[1000] = 42;
    heap.set(new Uint8Array(5000).fill(7), 200_000);
    const original = snapshot(80, heap); // a longer header than the base: heaps still line up
    const files = new TextEncoder().encode('files archive');
    const image: MachineImage = { snapshot: new Uint8Array(original), files, meta };
    const bytes = await encodeImage(image, { id: 'base-1', snapshot: base }, [{ name: 'fh', reason: 'open file' }]);
    assert.ok(bytes.length < 2000, `${bytes.length} bytes for a 1 MiB heap with a few changes`);
    assert.equal(readImageHeader(bytes).base, 'base-1');
    assert.deepEqual(readImageHeader(bytes).lost, [{ name: 'fh', reason: 'open file' }]);
    const decoded = await decodeImage(bytes, '0.29.0', async (id) => {
      assert.equal(id, 'base-1');
      return base;
    });
    assert.deepEqual(decoded.snapshot, original);
    assert.deepEqual(decoded.files, files);
    assert.deepEqual(decoded.meta, meta);
    assert.equal(decoded.snapshot.byteOffset % 8, 0, 'aligned for Pyodide');
  });

  it('stores a base image whole', async () => {
    const bytes = await encodeImage({ snapshot: new Uint8Array(base), files: new Uint8Array(0), meta }, null);
    assert.equal(readImageHeader(bytes).base, null);
    assert.deepEqual((await decodeImage(bytes, '0.29.0', () => Promise.reject(new Error('no base needed')))).snapshot, base);
  });

  it('refuses a snapshot of another Pyodide version', async () => {
    const bytes = await encodeImage({ snapshot: new Uint8Array(base), files: new Uint8Array(0), meta: { ...meta, pyodideVersion: '0.27.0' } }, null);
    await assert.rejects(decodeImage(bytes, '0.29.0', () => Promise.resolve(base)), (error: unknown) => {
      assert.ok(error instanceof ImageVersionError);
      assert.match(error.message, /made by Pyodide 0\.27\.0, but this Perennial runs Pyodide 0\.29\.0/);
      return true;
    });
  });

  it('rejects what is not an image, or is damaged', async () => {
    await assert.rejects(decodeImage(new TextEncoder().encode('hello'), '0.29.0', () => Promise.resolve(base)), /not a Perennial sandbox snapshot/);
    const bytes = await encodeImage({ snapshot: new Uint8Array(base), files: new Uint8Array(0), meta }, null);
    await assert.rejects(decodeImage(bytes.subarray(0, bytes.length - 40), '0.29.0', () => Promise.resolve(base)));
  });

  it('restores a snapshot from a patch on its base: changed runs, a longer header, a grown heap', async () => {
    const heap = heapOf((1 << 20) + 65536 + 3, 3); // grown, and not a multiple of 4
    heap[0]! ^= 1;
    heap[1000] = 42;
    heap[1010] = 43; // close to the last change: one run
    heap.set(new Uint8Array(5000).fill(7), 200_000);
    heap[heap.length - 1] = 9;
    const original = snapshot(96, heap);
    const bytes = await encodeImage({ snapshot: new Uint8Array(original), files: new Uint8Array(0), meta }, { id: 'base-1', snapshot: base });
    const patch = makeMemoryPatch((await readImage(bytes, '0.29.0')).memory);
    assert.ok(patch.length < 65536 + 5000 + 1000, `${patch.length} bytes`);
    const baseCopy = new Uint8Array(base);
    assert.deepEqual(applyMemoryPatch(patch, base), original);
    assert.deepEqual(base, baseCopy, 'the base is left as it was');
  });

  it('a machine equal to its base is a patch of its header alone', async () => {
    const bytes = await encodeImage({ snapshot: new Uint8Array(base), files: new Uint8Array(0), meta }, { id: 'base-1', snapshot: base });
    const patch = makeMemoryPatch((await readImage(bytes, '0.29.0')).memory);
    assert.equal(patch.length, 8 + 64);
    assert.deepEqual(applyMemoryPatch(patch, base), base);
  });
});
