import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { imageCodec } from '../../src/engines/sandbox/image-codec.ts';

/** Bytes that compress, but not to nothing. */
function sample(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i += 7) bytes[i] = (i * 31) & 0xff;
  return bytes;
}

describe('image codec', () => {
  it('round-trips a small section (compressed and decompressed on the calling thread)', async () => {
    const bytes = sample(300_000);
    const packed = await imageCodec.compress(bytes, 1);
    assert.ok(packed.length < bytes.length / 2);
    const unpacked = await imageCodec.decompress(packed);
    assert.deepEqual(unpacked, bytes);
    assert.equal(unpacked.byteOffset, 0, 'a buffer of its own, aligned for Pyodide');
  });

  it('round-trips a section larger than the calling thread takes (decompressed in the thread)', async () => {
    const bytes = sample(6 << 20);
    assert.deepEqual(await imageCodec.decompress(await imageCodec.compress(bytes, 1)), bytes);
  });

  it('works off this thread when told to, on a small section too, and on this thread when told not to', async () => {
    const small = sample(100_000);
    assert.deepEqual(await imageCodec.decompress(await imageCodec.compress(small, 1, true), true), small);
    const large = sample(6 << 20);
    assert.deepEqual(await imageCodec.decompress(await imageCodec.compress(large, 1, false), false), large);
  });

  it('a thread ended as it goes idle after a large job takes no later job down with it', async () => {
    for (let i = 0; i < 8; i++) {
      await imageCodec.compress(sample(9 << 20), 1);
      // The idle thread is being ended now: the next job starts another.
      await new Promise((resolve) => setTimeout(resolve, 1));
      assert.ok((await imageCodec.compress(sample(2 << 20), 1)).length > 0);
    }
  });

  it('rejects damaged data with a zstd error, on either thread', async () => {
    const packed = await imageCodec.compress(sample(100_000), 1);
    const damaged = packed.slice(0, packed.length - 40);
    await assert.rejects(imageCodec.decompress(damaged), /zstd/);
    await assert.rejects(imageCodec.decompress(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])), /zstd/);
  });
});
