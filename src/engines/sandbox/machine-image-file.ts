import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { LostItem } from '../../shared/types.ts';
import { imageCodec } from './image-codec.ts';
import { checkedChunks, concatBytes, memoryParts, storeMemory, type MemoryChunk } from './memory-chunks.ts';
import type { ImageMeta, PatchPart } from './protocol.ts';
import { CodedError } from '../../platform/coded-error.ts';

/**
 * Format 3 stores the memory in chunks, compressed or raw (memory-chunks.ts); format 2 as one zstd
 * frame, read as one such chunk. Both are written: format 2 where all the memory compresses.
 */
const MAGIC = 'PERENNIAL-SANDBOX-IMAGE-3\n';
const FORMAT_2_MAGIC = 'PERENNIAL-SANDBOX-IMAGE-2\n';
/** Any format's magic, with its version. */
const ANY_MAGIC = /^PERENNIAL-SANDBOX-IMAGE-(\d)\n/;
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
  /** How the memory is stored (format 3; absent in format 2, whose memory is one zstd frame). */
  memoryChunks?: MemoryChunk[];
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

/** A snapshot in a format of a later build: refused, and left as it is, for that build. */
export class NewerImageError extends CodedError {
  static override readonly errorCode = 'SnapshotVersionMismatch';
  constructor(format: number) {
    super(
      `the machine's snapshot was made by a newer Perennial (sandbox image format ${format}; this one reads 2 and 3); it is left as it is: update Perennial`,
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

/** A machine image on disk: magic, a JSON header, the memory's chunks and the archive of its files (zstd). */
export async function encodeImage(image: StoredImage, lost: LostItem[] = []): Promise<Uint8Array> {
  return concatBytes(await encodeImageParts(image, lost));
}

/** The image's bytes in the pieces they come in, to be written one after the other: a large machine's are not copied once more into one. */
export async function encodeImageParts(image: StoredImage, lost: LostItem[] = []): Promise<Uint8Array[]> {
  const memoryLength = image.memory.length;
  const memorySha256 = image.base === null ? createHash('sha256').update(image.memory).digest('hex') : undefined;
  const files = await imageCodec.compress(image.files, ZSTD_LEVEL);
  const memory = await storeMemory(image.memory, ZSTD_LEVEL);
  const header: ImageHeader = {
    pyodideVersion: image.meta.pyodideVersion,
    base: image.base,
    meta: image.meta,
    memoryLength,
    ...(memory.chunks ? { memoryChunks: memory.chunks } : {}),
    ...(memorySha256 ? { memorySha256 } : {}),
    memoryBytes: memory.stored.reduce((sum, part) => sum + part.length, 0),
    filesBytes: files.length,
    lost,
  };
  const headerBytes = new TextEncoder().encode(JSON.stringify(header));
  const start = new Uint8Array(MAGIC.length + 4);
  start.set(new TextEncoder().encode(memory.chunks ? MAGIC : FORMAT_2_MAGIC));
  new DataView(start.buffer).setUint32(MAGIC.length, headerBytes.length, true);
  return [start, headerBytes, ...memory.stored, files];
}

/** The header alone: which base an image needs, and its version. */
export function readImageHeader(bytes: Uint8Array): ImageHeader {
  return parseHeader(bytes).header;
}

/** An image's header, and where its memory section starts. */
function parseHeader(bytes: Uint8Array): { header: ImageHeader; memoryAt: number } {
  const text = (length: number) => new TextDecoder().decode(bytes.subarray(0, length));
  if (text(OLD_MAGIC.length) === OLD_MAGIC) throw new PreReleaseImageError();
  // Every format's magic has the same length.
  const magic = text(MAGIC.length);
  const format = Number(ANY_MAGIC.exec(magic)?.[1]);
  if (format > 3) throw new NewerImageError(format);
  if (bytes.length < MAGIC.length + 4 || (magic !== MAGIC && magic !== FORMAT_2_MAGIC)) throw new Error('not a Perennial sandbox snapshot (bad magic)');
  const headerLength = new DataView(bytes.buffer, bytes.byteOffset + MAGIC.length, 4).getUint32(0, true);
  const memoryAt = MAGIC.length + 4 + headerLength;
  if (bytes.length < memoryAt) throw new Error('the snapshot is damaged (cut short in its header)');
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(MAGIC.length + 4, memoryAt))) as ImageHeader;
  // Format 2's memory is one zstd frame.
  const chunks = magic === MAGIC ? header.memoryChunks : [{ length: header.memoryLength, stored: header.memoryBytes, codec: 'zstd' }];
  header.memoryChunks = checkedChunks(chunks, header.memoryLength, header.memoryBytes);
  return { header, memoryAt };
}

/** The start of an image file, up to its memory: magic and header. */
async function readHeaderBytes(file: FileHandle): Promise<Uint8Array> {
  const start = new Uint8Array(MAGIC.length + 4);
  await file.read(start, 0, start.length, 0);
  const headerLength = new DataView(start.buffer).getUint32(MAGIC.length, true);
  if (headerLength > 1 << 24) throw new Error('not a Perennial sandbox snapshot (its header would be larger than any is)');
  const bytes = new Uint8Array(start.length + headerLength);
  await file.read(bytes, 0, bytes.length, 0);
  return bytes;
}

/** The header of the image file at `path`, read from its start alone. */
export async function readImageHeaderFile(path: string): Promise<ImageHeader> {
  const file = await open(path, 'r');
  try {
    return readImageHeader(await readHeaderBytes(file));
  } finally {
    await file.close();
  }
}

/** An image file read back; `lost` is what its machine could not carry when it was saved. */
export async function readImage(bytes: Uint8Array, expectedVersion: string): Promise<StoredImage & { lost: LostItem[] }> {
  const { header, memoryAt, files } = await readSections(bytes, expectedVersion);
  const read = (at: number, length: number) => within(bytes, at, length);
  const parts = await memoryParts(header.memoryChunks!, memoryAt, read);
  const memory = concatBytes(parts.map((part) => (part instanceof Uint8Array ? part : read(part.at, part.length))));
  return { base: header.base, memory, files, meta: header.meta, lost: header.lost };
}

/** An image file's header and files, leaving its memory as it is stored (a base's is read from its plain copy). */
export async function readImageFiles(bytes: Uint8Array, expectedVersion: string): Promise<{ header: ImageHeader; files: Uint8Array }> {
  const { header, files } = await readSections(bytes, expectedVersion);
  return { header, files };
}

/**
 * The image file at `path`, its memory as parts: compressed chunks decompressed, raw ones left
 * in the file as ranges of it (which a sandbox reads there, see `PatchPart`).
 */
export async function readImageFile(
  path: string,
  expectedVersion: string,
): Promise<{ header: ImageHeader; memory: PatchPart[]; files: Uint8Array; file: ImageFile }> {
  const file = await open(path, 'r');
  try {
    const { header, memoryAt } = parseHeader(await readHeaderBytes(file));
    checkVersion(header, expectedVersion);
    const read = (at: number, length: number) => readAt(file, at, length);
    const filesAt = memoryAt + header.memoryBytes;
    const stats = await file.stat();
    if (stats.size < filesAt + header.filesBytes) throw new Error('the snapshot is damaged (cut short)');
    const files = await imageCodec.decompress(await read(filesAt, header.filesBytes));
    return { header, memory: await memoryParts(header.memoryChunks!, memoryAt, read), files, file: { path, identity: fileIdentity(stats) } };
  } finally {
    await file.close();
  }
}

/** An image file as it was read: where the rest of it is read later checks that it is the same file. */
export interface ImageFile {
  path: string;
  identity: string;
}

/** A machine's image file replaced between its reads: it is read again. */
export class ImageChangedError extends Error {
  constructor() {
    super("the machine's image file was replaced while it loaded");
  }
}

/** What tells one file, and one version of it, from another: a machine's file is replaced whole when it is saved. */
export function fileIdentity(stats: Stats): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
}

/** `length` bytes of an image file from `at`, which must be there. */
export async function readAt(file: FileHandle, at: number, length: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(length);
  for (let done = 0; done < length;) {
    const { bytesRead } = await file.read(bytes, done, length - done, at + done);
    if (!bytesRead) throw new Error('the snapshot is damaged (cut short)');
    done += bytesRead;
  }
  return bytes;
}

function checkVersion(header: ImageHeader, expectedVersion: string): void {
  if (header.pyodideVersion !== expectedVersion) throw new ImageVersionError(header.pyodideVersion, [expectedVersion]);
}

/** `length` bytes of `bytes` from `at`, which must be there. */
function within(bytes: Uint8Array, at: number, length: number): Uint8Array {
  if (at + length > bytes.length) throw new Error('the snapshot is damaged (cut short)');
  return bytes.subarray(at, at + length);
}

async function readSections(bytes: Uint8Array, expectedVersion: string): Promise<{ header: ImageHeader; memoryAt: number; files: Uint8Array }> {
  const { header, memoryAt } = parseHeader(bytes);
  checkVersion(header, expectedVersion);
  const files = await imageCodec.decompress(within(bytes, memoryAt + header.memoryBytes, header.filesBytes));
  return { header, memoryAt, files };
}
