import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHash } from 'node:crypto';
import {
  encodeImage,
  ImageVersionError,
  PreReleaseImageError,
  readImage,
  readImageFiles,
  readImageHeader,
} from '../../src/engines/sandbox/machine-image-file.ts';
import { applyMemoryPatch, identityPatch, makeMemoryPatch } from '../../src/engines/sandbox/memory-patch.ts';

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

describe('memory patches and machine image files', () => {
  const base = snapshot(64, heapOf(1 << 20, 3));

  it('a patch restores the snapshot: changed runs, a longer header, a grown heap; the base is left as it was', () => {
    const heap = heapOf((1 << 20) + 65536 + 3, 3); // grown, and not a multiple of 4
    heap[0]! ^= 1;
    heap[1000] = 42;
    heap[1010] = 43; // close to the last change: one run
    heap.set(new Uint8Array(5000).fill(7), 200_000);
    heap[heap.length - 1] = 9;
    const original = snapshot(96, heap); // a longer header than the base: heaps still line up
    const baseCopy = new Uint8Array(base);
    const patch = makeMemoryPatch(new Uint8Array(original), base);
    assert.ok(patch.length < 65536 + 5000 + 1000, `${patch.length} bytes`);
    assert.deepEqual(applyMemoryPatch(patch, base), original);
    assert.deepEqual(base, baseCopy);
  });

  it('a snapshot that sits at an odd offset of its buffer (as after IPC) makes the same patch', () => {
    const heap = heapOf(1 << 16, 3);
    heap[100] = 42;
    const original = snapshot(64, heap);
    const expected = makeMemoryPatch(new Uint8Array(original), base);
    const carrier = new Uint8Array(original.length + 3);
    carrier.set(original, 3);
    const patch = makeMemoryPatch(carrier.subarray(3), base);
    assert.deepEqual(patch, expected);
    assert.deepEqual(applyMemoryPatch(patch, base).subarray(0, original.length), original);
  });

  it('a machine equal to its base is a patch of its header alone', () => {
    const patch = makeMemoryPatch(new Uint8Array(base), base);
    assert.equal(patch.length, 8 + 64);
    assert.deepEqual(applyMemoryPatch(patch, base), base);
    assert.deepEqual(identityPatch(base.subarray(0, 64), base.length), patch, 'made from the header and length alone');
  });

  it('round-trips a machine stored as a patch on its base, and is small when little changed', async () => {
    const heap = heapOf(1 << 20, 3);
    heap[1000] = 42;
    heap.set(new Uint8Array(5000).fill(7), 200_000);
    const original = snapshot(80, heap);
    const files = new TextEncoder().encode('files archive');
    const memory = makeMemoryPatch(new Uint8Array(original), base);
    const bytes = await encodeImage({ base: 'base-1', memory, files, meta }, [{ name: 'fh', reason: 'open file' }]);
    assert.ok(bytes.length < 2000, `${bytes.length} bytes for a 1 MiB heap with a few changes`);
    assert.equal(readImageHeader(bytes).base, 'base-1');
    const stored = await readImage(bytes, '0.29.0');
    assert.deepEqual(stored.lost, [{ name: 'fh', reason: 'open file' }]);
    assert.deepEqual(stored.memory, memory);
    assert.deepEqual(applyMemoryPatch(stored.memory, base), original);
    assert.deepEqual(stored.files, files);
    assert.deepEqual(stored.meta, meta);
  });

  it('stores a base image whole', async () => {
    const bytes = await encodeImage({ base: null, memory: new Uint8Array(base), files: new Uint8Array([1, 2, 3]), meta });
    assert.equal(readImageHeader(bytes).base, null);
    assert.equal(
      readImageHeader(bytes).memorySha256,
      createHash('sha256').update(base).digest('hex'),
      'its plain copy can be checked without decompressing it',
    );
    assert.deepEqual((await readImageFiles(bytes, '0.29.0')).files, new Uint8Array([1, 2, 3]));
    assert.deepEqual((await readImage(bytes, '0.29.0')).memory, base);
  });

  it('refuses a snapshot of another Pyodide version', async () => {
    const bytes = await encodeImage({ base: null, memory: new Uint8Array(base), files: new Uint8Array(0), meta: { ...meta, pyodideVersion: '0.27.0' } });
    await assert.rejects(readImage(bytes, '0.29.0'), (error: unknown) => {
      assert.ok(error instanceof ImageVersionError);
      assert.match(error.message, /made by Pyodide 0\.27\.0, which this Perennial does not ship \(it runs Pyodide 0\.29\.0\)/);
      return true;
    });
  });

  it('rejects what is not an image, an image of a pre-release format, or a damaged one', async () => {
    await assert.rejects(readImage(new TextEncoder().encode('hello'), '0.29.0'), /not a Perennial sandbox snapshot/);
    await assert.rejects(readImage(new TextEncoder().encode('PERENNIAL-SANDBOX-IMAGE-1\n....'), '0.29.0'), (error: unknown) => {
      assert.ok(error instanceof PreReleaseImageError);
      assert.equal(PreReleaseImageError.errorCode, 'SnapshotVersionMismatch', "refused and left as it is, like another build's");
      assert.match(error.message, /pre-release build of Perennial \(sandbox image format 1\)/);
      return true;
    });
    const bytes = await encodeImage({ base: null, memory: new Uint8Array(base), files: new Uint8Array(0), meta });
    await assert.rejects(readImage(bytes.subarray(0, bytes.length - 40), '0.29.0'));
  });
});
