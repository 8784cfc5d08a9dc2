import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readKernelPackage } from '../../kernel/kernel-package.ts';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import type { BaseImageShelf } from '../base-image-shelf.ts';
import { encodeImage, readImage, readImageFiles, type ImageHeader } from './machine-image-file.ts';
import { heapOffset, identityPatch } from './memory-patch.ts';
import type { BaseFile, ImageMeta, MachineImage } from './protocol.ts';

/** The base image as the host keeps it: its memory stays in its file, which sandboxes read themselves. */
export interface BaseImage {
  id: string;
  files: Uint8Array;
  meta: ImageMeta;
  file: BaseFile;
  /** A fresh machine's memory as a patch on the base: its header alone. */
  freshPatch: Uint8Array;
}

export interface BaseImagesOptions {
  /** Where base images are kept, and their memory as plain files (`memory/`). */
  cacheDir: string;
  pyodideVersion: string;
  /** The sandbox process's folder: its code is part of a base's id, and a build ships its base there. */
  childDir: string;
  /** Where base images are shared with other nodes (a cluster's), in `shelfFolder`. */
  shelf?: BaseImageShelf;
  shelfFolder: string;
  /** Boots a machine cold with this build's kernel and takes its whole image: a few seconds, once per base. */
  coldBoot(): Promise<MachineImage>;
}

/**
 * The base images of one Pyodide build: a fresh machine, booted once per Pyodide and kernel
 * version, which every machine starts from and every snapshot is a delta against. The current
 * base is read from the data dir, else from the shelf or the build's own, else booted cold; older
 * bases stay for the machines made on them before an upgrade.
 */
export class BaseImages {
  /** Base images' memory as plain files, mounted read-only into every sandbox. */
  readonly memoryDir: string;
  readonly #options: BaseImagesOptions;
  #base?: Promise<BaseImage>;
  /** Older bases' memory files, by id: machines made before an upgrade stay patches on theirs. */
  readonly #olderBases = new Map<string, Promise<BaseFile>>();
  #baseId?: string;

  constructor(options: BaseImagesOptions) {
    this.#options = options;
    this.memoryDir = join(options.cacheDir, 'memory');
  }

  /** The current base, made when missing. */
  current(): Promise<BaseImage> {
    this.#base ??= this.#shelved(this.#currentId(), () => this.#readOrMake(this.#currentId()));
    this.#base.catch(() => (this.#base = undefined));
    return this.#base;
  }

  /** The memory snapshot of base `id`, for decoding patches. */
  async snapshot(id: string): Promise<Uint8Array> {
    return new Uint8Array(await readFile((await this.file(id)).path));
  }

  /** The memory file of base `id`: the current base's, or an older one's, made from its image when missing. */
  async file(id: string): Promise<BaseFile> {
    // A machine made before an upgrade needs only its own base: the current one is not made for it.
    if (id === this.#currentId()) return (await this.current()).file;
    let file = this.#olderBases.get(id);
    if (!file) {
      file = this.#olderFile(id);
      this.#olderBases.set(id, file);
      file.catch(() => this.#olderBases.delete(id));
    }
    return file;
  }

  /** The file name a build ships its base under (`shippedBaseName`). */
  get shippedName(): string {
    return shippedBaseName(this.#options.pyodideVersion, this.#currentId());
  }

  /** The current base's image file, made when missing. */
  async imageFile(): Promise<string> {
    await this.current();
    return this.#path(this.#currentId());
  }

  async #olderFile(id: string): Promise<BaseFile> {
    const path = this.#path(id);
    const bytes = await this.#shelved(id, () =>
      readFile(path).catch(() => {
        throw new Error(`the base image ${id} that this machine's snapshot needs is missing (${path})`);
      }),
    );
    const image = new Uint8Array(bytes);
    return this.#memoryFile(id, image, (await readImageFiles(image, this.#options.pyodideVersion)).header);
  }

  /**
   * The plain copy of a stored base's memory, which sandboxes read: when its hash is the image's,
   * the memory need not be decompressed here at all; else it is written again from the image.
   */
  async #memoryFile(id: string, image: Uint8Array, header: ImageHeader): Promise<BaseFile> {
    const file = { id, path: join(this.memoryDir, `${id}.snapshot`) };
    if (!header.memorySha256 || (await sha256Of(file.path)) !== header.memorySha256) {
      await mkdir(this.memoryDir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(file.path, (await readImage(image, this.#options.pyodideVersion)).memory);
    }
    return file;
  }

  /** The id of the base this build makes for this Pyodide: it changes with the kernel and the sandbox process. */
  #currentId(): string {
    this.#baseId ??= createHash('sha256')
      .update(this.#options.pyodideVersion)
      .update(readKernelPackage().id)
      .update(readFileSync(join(this.#options.childDir, 'main.js')))
      .digest('hex')
      .slice(0, 16);
    return this.#baseId;
  }

  /** `ensure` with the shelf's copy of base `id` in place first, and what it made shelved (see BaseImageShelf). */
  #shelved<T>(id: string, ensure: () => Promise<T>): Promise<T> {
    const { shelf, shelfFolder } = this.#options;
    return shelf ? shelf.provide(`${shelfFolder}/base-${id}`, this.#path(id), ensure) : ensure();
  }

  async #readOrMake(id: string): Promise<BaseImage> {
    const path = this.#path(id);
    const stored = (await readFile(path).catch(() => null)) ?? (await this.#shipped(id, path));
    if (stored) {
      try {
        const bytes = new Uint8Array(stored);
        const { header, files } = await readImageFiles(bytes, this.#options.pyodideVersion);
        if (header.base === null) {
          const file = await this.#memoryFile(id, bytes, header);
          return { id, files, meta: header.meta, file, freshPatch: identityPatch(await snapshotHeader(file.path), header.memoryLength) };
        }
      } catch {
        // Damaged: made again below.
      }
    }
    const image = await this.#options.coldBoot();
    const base = await this.#withMemoryFile(id, image);
    await mkdir(this.#options.cacheDir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(path, await encodeImage({ base: null, memory: image.snapshot, files: image.files, meta: image.meta }));
    return base;
  }

  /**
   * The base this build ships beside its sandbox process (`npm run build` makes it), put in the
   * cache, where machines made on it find it after an upgrade too: a fresh data dir's first
   * machine then starts in a second rather than boot Pyodide cold. A build without it makes its own.
   */
  async #shipped(id: string, path: string): Promise<Buffer | null> {
    const shipped = await readFile(join(this.#options.childDir, shippedBaseName(this.#options.pyodideVersion, id))).catch(() => null);
    if (!shipped) return null;
    await mkdir(this.#options.cacheDir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(path, shipped);
    return shipped;
  }

  /** The base with its memory as a plain file (written once per base), for sandboxes to read. */
  async #withMemoryFile(id: string, image: MachineImage): Promise<BaseImage> {
    const snapshotPath = join(this.memoryDir, `${id}.snapshot`);
    // Restores trust this file as the base: written again when missing or not exactly the base.
    const onDisk = await readFile(snapshotPath).catch(() => null);
    if (!onDisk || Buffer.compare(onDisk, image.snapshot) !== 0) {
      await mkdir(this.memoryDir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(snapshotPath, image.snapshot);
    }
    const header = image.snapshot.subarray(0, heapOffset(image.snapshot));
    // A copy: after IPC, the files may be a view into the snapshot's buffer, which must not stay.
    return { id, files: image.files.slice(), meta: image.meta, file: { id, path: snapshotPath }, freshPatch: identityPatch(header, image.snapshot.length) };
  }

  #path(id: string): string {
    return join(this.#options.cacheDir, `base-${id}.image`);
  }
}

/** The file name of a base image shipped beside the sandbox process. */
function shippedBaseName(pyodideVersion: string, id: string): string {
  return `base-${pyodideVersion}-${id}.image`;
}

/** A file's SHA-256, read a piece at a time: a base's memory is tens of MiB. */
async function sha256Of(path: string): Promise<string | null> {
  const hash = createHash('sha256');
  try {
    for await (const piece of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(piece as Buffer);
  } catch {
    return null;
  }
  return hash.digest('hex');
}

/** The bytes of a memory snapshot file before its heap. */
async function snapshotHeader(path: string): Promise<Uint8Array> {
  const handle = await open(path, 'r');
  try {
    const prefix = new Uint8Array(8);
    await handle.read(prefix, 0, 8, 0);
    const header = new Uint8Array(heapOffset(prefix));
    await handle.read(header, 0, header.length, 0);
    return header;
  } finally {
    await handle.close();
  }
}
