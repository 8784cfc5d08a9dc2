import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createHash, randomFillSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageCodec } from '../../src/engines/sandbox/image-codec.ts';
import {
  encodeImage,
  ImageVersionError,
  NewerImageError,
  PreReleaseImageError,
  readImage,
  readImageFile,
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

  it('stores memory that does not compress (random bytes) raw, chunk by chunk beside memory that does, and reads both back from a file', async () => {
    const memory = new Uint8Array(6 << 20);
    randomFillSync(memory.subarray(0, 3 << 20));
    memory.set(heapOf(3 << 20, 5), 3 << 20);
    const bytes = await encodeImage({ base: 'base-1', memory, files: new Uint8Array([4, 5]), meta });
    const { memoryChunks, memoryBytes } = readImageHeader(bytes);
    assert.deepEqual(
      memoryChunks!.map((chunk) => chunk.codec),
      ['raw', 'raw', 'raw', 'zstd', 'zstd', 'zstd'],
    );
    assert.ok(memoryBytes < (3 << 20) + (1 << 20), `${memoryBytes} bytes stored`);
    assert.deepEqual((await readImage(bytes, '0.29.0')).memory, memory);
    const dir = await mkdtemp(join(tmpdir(), 'perennial-image-'));
    try {
      const path = join(dir, 'machine.image');
      await writeFile(path, bytes);
      const read = await readImageFile(path, '0.29.0');
      assert.deepEqual(read.files, new Uint8Array([4, 5]));
      const ranges = read.memory.filter((part) => !(part instanceof Uint8Array));
      assert.equal(ranges.length, 3, 'the raw chunks are left in the file, as ranges of it');
      const whole = new Uint8Array(memory.length);
      let at = 0;
      for (const part of read.memory) {
        whole.set(part instanceof Uint8Array ? part : bytes.subarray(part.at, part.at + part.length), at);
        at += part.length;
      }
      assert.deepEqual(whole, memory);
      await writeFile(path, bytes.subarray(0, bytes.length - 10));
      await assert.rejects(readImageFile(path, '0.29.0'), /damaged/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reads an image of format 2, whose memory is one zstd frame', async () => {
    const memory = heapOf(1 << 20, 7);
    const files = new Uint8Array([9]);
    const [zMemory, zFiles] = [await imageCodec.compress(memory, 1), await imageCodec.compress(files, 1)];
    const header = {
      pyodideVersion: '0.29.0',
      base: 'base-1',
      meta,
      memoryLength: memory.length,
      memoryBytes: zMemory.length,
      filesBytes: zFiles.length,
      lost: [],
    };
    const headerBytes = new TextEncoder().encode(JSON.stringify(header));
    const magic = new TextEncoder().encode('PERENNIAL-SANDBOX-IMAGE-2\n');
    const bytes = new Uint8Array(magic.length + 4 + headerBytes.length + zMemory.length + zFiles.length);
    bytes.set(magic);
    new DataView(bytes.buffer).setUint32(magic.length, headerBytes.length, true);
    bytes.set(headerBytes, magic.length + 4);
    bytes.set(zMemory, magic.length + 4 + headerBytes.length);
    bytes.set(zFiles, magic.length + 4 + headerBytes.length + zMemory.length);
    const stored = await readImage(bytes, '0.29.0');
    assert.deepEqual(stored.memory, memory);
    assert.deepEqual(stored.files, files);
  });

  it("rejects an image whose memory's chunks do not add up, and refuses one of a later format, left as it is", async () => {
    const memory = heapOf(2 << 20, 3);
    randomFillSync(memory.subarray(1 << 20));
    const bytes = await encodeImage({ base: 'base-1', memory, files: new Uint8Array(0), meta });
    // The same length, so that the header's length still holds.
    const damaged = Buffer.from(bytes);
    damaged.write('"codec":"lz4!"', damaged.indexOf('"codec":"zstd"'));
    await assert.rejects(readImage(damaged, '0.29.0'), /chunks do not add up/);
    const cut = Buffer.from(bytes);
    cut.write('"length":1048575', cut.indexOf('"length":1048576'));
    await assert.rejects(readImage(cut, '0.29.0'), /chunks do not add up/);
    const later = Buffer.from(bytes);
    later.write('PERENNIAL-SANDBOX-IMAGE-4\n', 0);
    await assert.rejects(readImage(later, '0.29.0'), (error: unknown) => {
      assert.ok(error instanceof NewerImageError);
      assert.equal(NewerImageError.errorCode, 'SnapshotVersionMismatch', "refused and left as it is, like another build's");
      assert.match(error.message, /made by a newer Perennial \(sandbox image format 4; this one reads 2 and 3\)/);
      return true;
    });
  });

  it('writes format 2, which earlier builds read, when all the memory compresses', async () => {
    const bytes = await encodeImage({ base: 'base-1', memory: heapOf(3 << 20, 3), files: new Uint8Array(0), meta });
    assert.equal(new TextDecoder().decode(bytes.subarray(0, 26)), 'PERENNIAL-SANDBOX-IMAGE-2\n');
    assert.equal(readImageHeader(bytes).memoryChunks!.length, 1, 'read as one zstd chunk');
    assert.deepEqual((await readImage(bytes, '0.29.0')).memory, heapOf(3 << 20, 3));
  });
});
