import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { LostItem } from '../../shared/types.ts';
import { imageCodec } from './image-codec.ts';
import type { ImageMeta } from './protocol.ts';
import { CodedError } from '../../platform/coded-error.ts';

const MAGIC = 'PERENNIAL-SANDBOX-IMAGE-2\n';
/** Images of pre-release builds stored the memory as a whole XOR delta. */
const OLD_MAGIC = 'PERENNIAL-SANDBOX-IMAGE-1\n';
const ZSTD_LEVEL = 1;

export interface ImageHeader {
  pyodideVersion: string;
  /** The base image whose memory the stored memory is a patch on; null when it is stored whole. */
  base: string | null;
  meta: ImageMeta;
  /** Length of the memory section once decompressed: a check against damage. */
  memoryLength: number;
  /** A base image's memory, hashed: its plain copy for sandboxes is checked without decompressing it. */
  memorySha256?: string;
  memoryBytes: number;
  filesBytes: number;
  lost: LostItem[];
}

/** A snapshot made by a Pyodide build this Perennial does not ship: restoring it would corrupt the machine. */
export class ImageVersionError extends CodedError {
  static override readonly errorCode = 'SnapshotVersionMismatch';
  constructor(found: string, shipped: string[]) {
    super(
      `the machine's snapshot was made by Pyodide ${found}, which this Perennial does not ship (it runs Pyodide ${shipped.join(' and ')}); use the Perennial version that made it`,
    );
  }
}

/** A snapshot in the format of pre-release builds (1): refused, and left as it is, like one of another build. */
export class PreReleaseImageError extends CodedError {
  static override readonly errorCode = 'SnapshotVersionMismatch';
  constructor() {
    super(
      "the machine's snapshot was made by a pre-release build of Perennial (sandbox image format 1), whose format this version cannot load; it is left as it is",
    );
  }
}

/** An image as stored: a base image's memory whole, a machine's as a patch on its base (see memory-patch.ts). */
export interface StoredImage {
  base: string | null;
  memory: Uint8Array;
  files: Uint8Array;
  meta: ImageMeta;
}

/**
 * A machine image on disk: magic, a JSON header, the memory and the archive of its files (both
 * zstd). `handOver`: the buffer the image's memory views goes to the codec's thread (see
 * `compress`), and neither it nor the files, which may view the same, may be read after.
 */
export async function encodeImage(image: StoredImage, lost: LostItem[] = [], handOver = false): Promise<Uint8Array> {
  const memoryLength = image.memory.length;
  const memorySha256 = image.base === null ? createHash('sha256').update(image.memory).digest('hex') : undefined;
  // The files first: they may view the buffer that the memory's job hands over.
  const files = await imageCodec.compress(image.files, ZSTD_LEVEL);
  const memory = await imageCodec.compress(image.memory, ZSTD_LEVEL, handOver);
  const header: ImageHeader = {
    pyodideVersion: image.meta.pyodideVersion,
    base: image.base,
    meta: image.meta,
    memoryLength,
    ...(memorySha256 ? { memorySha256 } : {}),
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
  const text = (length: number) => new TextDecoder().decode(bytes.subarray(0, length));
  if (text(OLD_MAGIC.length) === OLD_MAGIC) throw new PreReleaseImageError();
  if (bytes.length < MAGIC.length + 4 || text(MAGIC.length) !== MAGIC) throw new Error('not a Perennial sandbox snapshot (bad magic)');
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset + MAGIC.length, 4).getUint32(0, true);
  return JSON.parse(new TextDecoder().decode(bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + headerLength))) as ImageHeader;
}

/** The header of the image file at `path`, read from its start alone. */
export async function readImageHeaderFile(path: string): Promise<ImageHeader> {
  const file = await open(path, 'r');
  try {
    const start = new Uint8Array(MAGIC.length + 4);
    await file.read(start, 0, start.length, 0);
    const headerLength = new DataView(start.buffer).getUint32(MAGIC.length, true);
    if (headerLength > 1 << 24) throw new Error('not a Perennial sandbox snapshot (its header would be larger than any is)');
    const bytes = new Uint8Array(start.length + headerLength);
    await file.read(bytes, 0, bytes.length, 0);
    return readImageHeader(bytes);
  } finally {
    await file.close();
  }
}

/** An image file read back; `lost` is what its machine could not carry when it was saved. */
export async function readImage(bytes: Uint8Array, expectedVersion: string): Promise<StoredImage & { lost: LostItem[] }> {
  const { header, memorySection, files } = await readSections(bytes, expectedVersion);
  // A fresh, aligned copy: Pyodide reads the snapshot header as 32-bit words.
  const memory = await imageCodec.decompress(memorySection);
  if (memory.length !== header.memoryLength) throw new Error('the snapshot is damaged (wrong length after decompression)');
  return { base: header.base, memory, files, meta: header.meta, lost: header.lost };
}

/** An image file's header and files, leaving its memory compressed (a base's is read from its plain copy). */
export async function readImageFiles(bytes: Uint8Array, expectedVersion: string): Promise<{ header: ImageHeader; files: Uint8Array }> {
  const { header, files } = await readSections(bytes, expectedVersion);
  return { header, files };
}

async function readSections(bytes: Uint8Array, expectedVersion: string): Promise<{ header: ImageHeader; memorySection: Uint8Array; files: Uint8Array }> {
  const header = readImageHeader(bytes);
  if (header.pyodideVersion !== expectedVersion) throw new ImageVersionError(header.pyodideVersion, [expectedVersion]);
  const start = MAGIC.length + 4 + new TextEncoder().encode(JSON.stringify(header)).length;
  const memoryEnd = start + header.memoryBytes;
  const files = await imageCodec.decompress(bytes.subarray(memoryEnd, memoryEnd + header.filesBytes));
  return { header, memorySection: bytes.subarray(start, memoryEnd), files };
}
