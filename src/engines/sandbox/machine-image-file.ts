import { init, compress, decompress } from '@bokuweb/zstd-wasm';
import type { LostItem } from '../../shared/types.ts';
import { heapOffset } from './memory-patch.ts';
import type { ImageMeta, MachineImage } from './protocol.ts';

const MAGIC = 'PERENNIAL-SANDBOX-IMAGE-1\n';
const ZSTD_LEVEL = 1;

export interface ImageHeader {
  pyodideVersion: string;
  /** The base image the memory is an XOR delta against; null when it is stored whole. */
  base: string | null;
  meta: ImageMeta;
  snapshotLength: number;
  memoryBytes: number;
  filesBytes: number;
  lost: LostItem[];
}

/** A snapshot made by another Pyodide build: restoring it would corrupt the machine. */
export class ImageVersionError extends Error {
  static readonly errorCode = 'SnapshotVersionMismatch';
  constructor(found: string, expected: string) {
    super(`the machine's snapshot was made by Pyodide ${found}, but this Perennial runs Pyodide ${expected}; keep the Perennial version that made it to use this machine`);
    this.name = 'ImageVersionError';
  }
}

let zstdReady: Promise<void> | undefined;

export function ensureZstd(): Promise<void> {
  zstdReady ??= init();
  return zstdReady;
}

/** `target ^= source` over their common length. Wasm memory never moves, so a heap XOR its base is mostly zeros. */
function xorInto(target: Uint8Array, source: Uint8Array): void {
  const length = Math.min(target.length, source.length);
  const words = length >>> 2;
  if (target.byteOffset % 4 === 0 && source.byteOffset % 4 === 0) {
    const a = new Uint32Array(target.buffer, target.byteOffset, words);
    const b = new Uint32Array(source.buffer, source.byteOffset, words);
    for (let i = 0; i < words; i++) a[i]! ^= b[i]!;
    for (let i = words * 4; i < length; i++) target[i]! ^= source[i]!;
  } else {
    for (let i = 0; i < length; i++) target[i]! ^= source[i]!;
  }
}

function xorWithBase(snapshot: Uint8Array, base: Uint8Array): void {
  xorInto(snapshot.subarray(heapOffset(snapshot)), base.subarray(heapOffset(base)));
}

/**
 * A machine image on disk: magic, a JSON header, the memory snapshot (an XOR delta against a base
 * image, compressed with zstd) and the archive of its files (zstd). Encoding modifies
 * `image.snapshot` in place.
 */
export async function encodeImage(image: MachineImage, base: { id: string; snapshot: Uint8Array } | null, lost: LostItem[] = []): Promise<Uint8Array> {
  await ensureZstd();
  const snapshotLength = image.snapshot.length;
  if (base) xorWithBase(image.snapshot, base.snapshot);
  const memory = compress(image.snapshot, ZSTD_LEVEL);
  const files = compress(image.files, ZSTD_LEVEL);
  const header: ImageHeader = {
    pyodideVersion: image.meta.pyodideVersion,
    base: base?.id ?? null,
    meta: image.meta,
    snapshotLength,
    memoryBytes: memory.length,
    filesBytes: files.length,
    lost,
  };
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const magic = new TextEncoder().encode(MAGIC);
  const out = new Uint8Array(magic.length + 4 + headerBytes.length + memory.length + files.length);
  out.set(magic, 0);
  new DataView(out.buffer).setUint32(magic.length, headerBytes.length, true);
  let position = magic.length + 4;
  for (const part of [headerBytes, memory, files]) {
    out.set(part, position);
    position += part.length;
  }
  return out;
}

/** The header alone: which base an image needs, and its version. */
export function readImageHeader(bytes: Uint8Array): ImageHeader {
  const magic = new TextEncoder().encode(MAGIC);
  if (bytes.length < magic.length + 4 || new TextDecoder().decode(bytes.subarray(0, magic.length)) !== MAGIC) {
    throw new Error('not a Perennial sandbox snapshot (bad magic)');
  }
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset + magic.length, 4).getUint32(0, true);
  return JSON.parse(new TextDecoder().decode(bytes.subarray(magic.length + 4, magic.length + 4 + headerLength))) as ImageHeader;
}

/** An image file as read: its header, its memory as stored (an XOR delta when `header.base` is set), its files. */
export interface StoredImage {
  header: ImageHeader;
  memory: Uint8Array;
  files: Uint8Array;
}

export async function readImage(bytes: Uint8Array, expectedVersion: string): Promise<StoredImage> {
  await ensureZstd();
  const header = readImageHeader(bytes);
  if (header.pyodideVersion !== expectedVersion) throw new ImageVersionError(header.pyodideVersion, expectedVersion);
  const start = MAGIC.length + 4 + new TextEncoder().encode(JSON.stringify(header)).length;
  const memoryEnd = start + header.memoryBytes;
  // A fresh, aligned copy: Pyodide reads the snapshot header as 32-bit words.
  const memory = new Uint8Array(decompress(bytes.subarray(start, memoryEnd)));
  if (memory.length !== header.snapshotLength) throw new Error('the snapshot is damaged (wrong length after decompression)');
  const files = new Uint8Array(decompress(bytes.subarray(memoryEnd, memoryEnd + header.filesBytes)));
  return { header, memory, files };
}

/** The whole image: the stored memory XORed back with its base (in place). */
export async function wholeImage(stored: StoredImage, baseSnapshot: (id: string) => Promise<Uint8Array>): Promise<MachineImage> {
  if (stored.header.base) xorWithBase(stored.memory, await baseSnapshot(stored.header.base));
  return { snapshot: stored.memory, files: stored.files, meta: stored.header.meta };
}

export async function decodeImage(bytes: Uint8Array, expectedVersion: string, baseSnapshot: (id: string) => Promise<Uint8Array>): Promise<MachineImage> {
  return wholeImage(await readImage(bytes, expectedVersion), baseSnapshot);
}
