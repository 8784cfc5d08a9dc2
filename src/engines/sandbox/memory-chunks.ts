import { imageCodec } from './image-codec.ts';
import type { PatchPart } from './protocol.ts';

/**
 * A machine image's memory as stored where some of it does not compress (image format 3): chunks
 * of 1 MiB, each compressed with zstd, or stored raw where compressing does not pay. Memory that
 * holds random or already compressed bytes took zstd 400 ms for 80 MB to save nothing, and as long
 * again to decompress; a raw chunk costs neither, and a sandbox reads it from the image file
 * itself (see `PatchPart`).
 */
const CHUNK_BYTES = 1 << 20;
/** A chunk is judged by a sample from its middle this large: a few percent of its compressing. */
const SAMPLE_BYTES = 16 << 10;
/** A chunk is stored raw when it (or its sample) compresses to more than this share of its size. */
const RAW_ABOVE = 0.9;
/** Memory this large is compressed and decompressed off the server's thread (see `imageCodec`). */
const OFF_THREAD_BYTES = 4 << 20;

/** One stored chunk: `length` bytes of memory, `stored` bytes in the file. */
export interface MemoryChunk {
  length: number;
  stored: number;
  codec: 'zstd' | 'raw';
}

/**
 * `memory` as stored: in chunks, each with the bytes that store it, where some of it does not
 * compress; else as one zstd frame (`chunks` undefined), as images of format 2 store it, which
 * nodes of earlier builds in a cluster can still read (see docs/cluster.md).
 */
export async function storeMemory(memory: Uint8Array, level: number): Promise<{ chunks?: MemoryChunk[]; stored: Uint8Array[] }> {
  const offThread = memory.length > OFF_THREAD_BYTES;
  const whole: Uint8Array[] = [];
  for (let at = 0; at < memory.length; at += CHUNK_BYTES) whole.push(memory.subarray(at, at + CHUNK_BYTES));
  const worth = await Promise.all(whole.map((chunk) => worthCompressing(chunk, level)));
  if (worth.every(Boolean)) return { stored: [await imageCodec.compress(memory, level, offThread)] };
  const chunks: MemoryChunk[] = [];
  const stored: Uint8Array[] = [];
  for (const [i, chunk] of whole.entries()) {
    const packed = worth[i] ? await imageCodec.compress(chunk, level, offThread) : undefined;
    const raw = !packed || packed.length > chunk.length * RAW_ABOVE;
    chunks.push({ length: chunk.length, stored: raw ? chunk.length : packed.length, codec: raw ? 'raw' : 'zstd' });
    stored.push(raw ? chunk : packed);
  }
  return { chunks, stored };
}

/** Whether a sample of `chunk` compresses to less than `RAW_ABOVE` of itself (a small chunk is tried whole). */
async function worthCompressing(chunk: Uint8Array, level: number): Promise<boolean> {
  if (chunk.length <= 4 * SAMPLE_BYTES) return true;
  const from = (chunk.length >>> 1) & ~3;
  const sample = chunk.subarray(from, from + SAMPLE_BYTES);
  return (await imageCodec.compress(sample, level, false)).length <= sample.length * RAW_ABOVE;
}

/**
 * A memory section's parts, from its chunks (which start at byte `start` of the image file):
 * compressed ones read through `read` and decompressed, raw ones as where they lie in the file.
 */
export async function memoryParts(
  chunks: MemoryChunk[],
  start: number,
  read: (at: number, length: number) => Promise<Uint8Array> | Uint8Array,
): Promise<PatchPart[]> {
  const offThread = chunks.reduce((sum, chunk) => sum + chunk.length, 0) > OFF_THREAD_BYTES;
  const parts: PatchPart[] = [];
  let at = start;
  for (const chunk of chunks) {
    if (chunk.codec === 'raw') parts.push({ at, length: chunk.length });
    else {
      const bytes = await imageCodec.decompress(await read(at, chunk.stored), offThread);
      if (bytes.length !== chunk.length) throw new Error('the snapshot is damaged (a memory chunk of the wrong length)');
      parts.push(bytes);
    }
    at += chunk.stored;
  }
  return parts;
}

/** The chunks of a memory section and what they add up to, checked against the image's header. */
export function checkedChunks(chunks: unknown, memoryLength: number, memoryBytes: number): MemoryChunk[] {
  const valid =
    Array.isArray(chunks) &&
    chunks.every(
      (chunk: MemoryChunk) =>
        Number.isSafeInteger(chunk?.length) &&
        Number.isSafeInteger(chunk.stored) &&
        (chunk.codec === 'raw' ? chunk.stored === chunk.length : chunk.codec === 'zstd'),
    );
  const list = valid ? (chunks as MemoryChunk[]) : [];
  const sum = (key: 'length' | 'stored') => list.reduce((total, chunk) => total + chunk[key], 0);
  if (!valid || sum('length') !== memoryLength || sum('stored') !== memoryBytes) throw new Error("the snapshot is damaged (its memory's chunks do not add up)");
  return list;
}

/** `parts` end to end, in one buffer of their own (aligned: Pyodide reads a snapshot's header as words): the only part itself where it is one. */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  const [only] = parts;
  if (parts.length === 1 && only!.byteOffset === 0 && only!.length === only!.buffer.byteLength) return only!;
  const whole = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.length;
  }
  return whole;
}
