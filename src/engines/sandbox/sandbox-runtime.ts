import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readKernelPackage } from '../../kernel/kernel-package.ts';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import type { BaseImageShelf } from '../base-image-shelf.ts';
import { collectWhenQuiet } from '../../platform/garbage-collection.ts';
import { DEFAULT_POOL_IDLE_SECONDS } from '../engine.ts';
import { PoolDemand } from '../pool-demand.ts';
import { PhaseClock } from '../../platform/phase-timings.ts';
import { detectIsolation, type Isolation } from './isolation.ts';
import {
  encodeImage,
  encodeImageParts,
  ImageChangedError,
  readImage,
  readImageFile,
  readImageFiles,
  type ImageFile,
  type ImageHeader,
} from './machine-image-file.ts';
import { heapOffset, identityPatch, makeMemoryPatch } from './memory-patch.ts';
import type { BaseFile, ImageMeta, ImportNames, KernelFiles, LoadImage, MachineConfig, MachineImage, SandboxMount, TakenImage } from './protocol.ts';
import { pyodideDir, type PyodideRuntime } from './pyodide-runtimes.ts';
import { sandboxChildDir } from './sandbox-assets.ts';
import { SandboxProcess } from './sandbox-process.ts';
import { PackageCache, type PackageSource } from './package-cache.ts';

/** The base image's machine boots with these limits. */
const BASE_CONFIG: MachineConfig = { memoryMb: 512, outputLimit: 1 << 20 };
/** Processes a swapped-out machine left, kept ready beyond the pool's size for the next swap-in (each ~110 MB). */
const REUSED_SPARE = 2;
/** A process serves at most this many machines, one after the other, then ends: what a realm gathers over time stays bounded. */
const MACHINES_PER_PROCESS = 100;

export interface SandboxRuntimeOptions {
  /** Where base images and the package cache are kept. */
  cacheDir: string;
  /** The Pyodide build its machines run. */
  pyodide: PyodideRuntime;
  /** Sandbox processes kept ready, Pyodide booted ahead, for new machines and swap-ins; 0 for none. Default 1. */
  poolSize?: number;
  /** The pool is emptied after this long without a sandbox machine made or swapped in. Default 300 s. */
  poolIdleSeconds?: number;
  /** Where packages come from (`defaultPackageSource`). */
  packageSource: PackageSource;
  /** Where base images are shared with other nodes (a cluster's); none: each data dir makes its own. */
  baseImages?: BaseImageShelf;
}

/**
 * The package source of a Pyodide build. For the current one, the environment may name another:
 * `PERENNIAL_PYODIDE_PACKAGES` (a folder or URL of wheels; its own pyodide-lock.json is used when
 * it has one) and `PERENNIAL_PYODIDE_LOCK`.
 */
export function defaultPackageSource(pyodide: PyodideRuntime, current: boolean, env: NodeJS.ProcessEnv = process.env): PackageSource {
  const wheels = current ? env.PERENNIAL_PYODIDE_PACKAGES : undefined;
  const ownLock = wheels && !/^https?:/.test(wheels) && existsSync(join(wheels, 'pyodide-lock.json')) ? join(wheels, 'pyodide-lock.json') : undefined;
  return {
    lockFile: (current && env.PERENNIAL_PYODIDE_LOCK) || ownLock || join(pyodideDir(pyodide), 'pyodide-lock.json'),
    baseUrl: wheels || `https://cdn.jsdelivr.net/pyodide/v${pyodide.version}/full/`,
  };
}

/** Where a machine runs: the launch options that need a process of their own, and whose machine it is. */
export interface SandboxPlacement {
  network: boolean;
  workspace?: SandboxMount;
  /** Machines of different tenants (a team's people) never share a process, not even one after the other. */
  tenant?: string;
}

/** The base image as the host keeps it: its memory stays in its file, which sandboxes read themselves. */
interface BaseImage {
  id: string;
  files: Uint8Array;
  meta: ImageMeta;
  file: BaseFile;
  /** A fresh machine's memory as a patch on the base: its header alone. */
  freshPatch: Uint8Array;
}

/**
 * What all sandbox machines of one manager share: the isolation found on this host, the base
 * image (a fresh machine, booted once per Pyodide and kernel version, which every machine starts
 * from and every snapshot is a delta against), and a pool, so that creating or swapping in a
 * machine does not wait for a process to start: processes whose Pyodide is booted ahead and
 * waits for a snapshot, a new machine's being the base's. One pool serves both, and fills only
 * once machines are being made or swapped in (`PoolDemand`), as a process costs ~110 MB. A
 * process holds one machine at a time, on an interpreter of its own, which keeps a warm machine's
 * memory to its own; a machine swapped out leaves its process to the next machine of the same
 * tenant (`release`), which then costs no process start.
 */
export class SandboxRuntime {
  readonly isolation: Isolation = detectIsolation();
  readonly pyodide: PyodideRuntime;
  readonly pyodideVersion: string;
  readonly #cacheDir: string;
  readonly #poolSize: number;
  readonly #demand: PoolDemand;
  readonly #childDir = sandboxChildDir();
  readonly #pyodideDir: string;
  /** Base images' memory as plain files, mounted read-only into every sandbox. */
  readonly #memoryDir: string;
  /** Each sandbox process's mailbox folder (mailbox.ts). */
  readonly #mailboxes: string;
  readonly packages: PackageCache;
  #base?: Promise<BaseImage>;
  /** Older bases' memory files, by id: machines made before an upgrade stay patches on theirs. */
  readonly #olderBases = new Map<string, Promise<BaseFile>>();
  #baseId?: string;
  readonly #shelf?: BaseImageShelf;
  readonly #shelfFolder: string;
  /** Processes with Pyodide booted ahead and no machine yet. */
  #ready: SandboxProcess[] = [];
  /** Processes letting their last machine go (`release`), ready after. */
  readonly #unloading = new Set<SandboxProcess>();
  #closed = false;
  #imports?: Promise<ImportNames>;

  constructor(options: SandboxRuntimeOptions) {
    this.pyodide = options.pyodide;
    this.pyodideVersion = options.pyodide.version;
    this.#pyodideDir = pyodideDir(options.pyodide);
    this.#cacheDir = options.cacheDir;
    this.#memoryDir = join(options.cacheDir, 'memory');
    // One server owns a data dir: the mailboxes there are of sandboxes a server before it left behind.
    this.#mailboxes = join(options.cacheDir, 'mailboxes');
    rmSync(this.#mailboxes, { recursive: true, force: true });
    this.#poolSize = options.poolSize ?? 1;
    this.#demand = new PoolDemand((options.poolIdleSeconds ?? DEFAULT_POOL_IDLE_SECONDS) * 1000, {
      fill: () => this.#refill(),
      empty: () => void this.#drain(),
    });
    this.packages = new PackageCache(join(options.cacheDir, 'packages'), options.packageSource);
    this.#shelf = options.baseImages;
    this.#shelfFolder = options.pyodide.cacheFolder;
  }

  /** Starts filling the pool now rather than once machines are made or swapped in. */
  prewarm(): void {
    this.#demand.prewarm();
  }

  /** Sandbox processes waiting in the pool, warmed up on the base. */
  get pooled(): number {
    return this.#ready.filter((sandbox) => sandbox.alive && sandbox.prefetched).length;
  }

  /** A process holding a fresh machine with `config`'s limits. */
  async fresh(placement: SandboxPlacement, config: MachineConfig): Promise<SandboxProcess> {
    const base = await this.base();
    return this.#acquire(placement, config, { image: { patch: [base.freshPatch], base: base.file, files: base.files, meta: base.meta } });
  }

  /**
   * A process holding the machine of the image file at `path`, with `config`'s limits. A machine
   * an earlier build made has its kernel upgraded to this build's as it loads.
   */
  async restore(placement: SandboxPlacement, config: MachineConfig, path: string): Promise<SandboxProcess> {
    for (let attempt = 1; ; attempt++) {
      const clock = new PhaseClock();
      const { header, memory, files, file } = await readImageFile(path, this.pyodideVersion);
      clock.lap('host: image read and decompressed');
      const kernel = readKernelPackage();
      const { meta } = header;
      // As a patch on its base, only what differs from it goes to the sandbox; what is stored raw,
      // the sandbox reads from the file itself.
      const image: LoadImage = header.base
        ? { patch: memory, base: await this.#baseFile(header.base), files, meta }
        : { snapshot: (await readImage(new Uint8Array(await readFile(path)), this.pyodideVersion)).memory, files, meta };
      try {
        return await this.#acquire(placement, config, { image, ...(meta.kernel === kernel.id ? {} : { kernel: kernel.files }) }, file);
      } catch (error) {
        // Saved again meanwhile (nothing saves a machine while it loads; this is a safeguard): the new file is the machine.
        if (!(error instanceof ImageChangedError) || attempt === 3) throw error;
      }
    }
  }

  /** A process, from the pool where the placement allows, with `image` loaded and `config`'s limits. */
  async #acquire(
    placement: SandboxPlacement,
    config: MachineConfig,
    source: { image: LoadImage; kernel?: KernelFiles },
    imageFile?: ImageFile,
  ): Promise<SandboxProcess> {
    const pooled = isDefaultPlacement(placement);
    const sandbox = (pooled ? this.#takeReady(placement.tenant) : undefined) ?? this.#spawn(placement);
    sandbox.tenant = placement.tenant;
    try {
      await sandbox.load(config, { ...source, importNames: await this.#importNames() }, imageFile);
      return sandbox;
    } catch (error) {
      await sandbox.kill();
      throw error;
    } finally {
      if (pooled) this.#demand.demanded();
      // The image crossed to the sandbox, and a first base was built: tens of MiB now garbage.
      collectWhenQuiet();
    }
  }

  /**
   * The machine of `sandbox` is done with it (swapped out, stopped): while machines keep coming
   * (the pool fills), a pooled process that served few enough machines lets it go and waits for
   * the next of its tenant; any other ends. Settles once it is ready, or ended.
   */
  async release(sandbox: SandboxProcess): Promise<void> {
    const reusable =
      !this.#closed &&
      this.#demand.filling &&
      sandbox.alive &&
      sandbox.idle &&
      sandbox.pooled &&
      sandbox.served < MACHINES_PER_PROCESS &&
      this.#ready.length + this.#unloading.size < this.#poolSize + REUSED_SPARE;
    if (!reusable) {
      await sandbox.kill();
      return;
    }
    // Ready once its machine is gone from it: a load sent meanwhile would meet the last machine.
    this.#unloading.add(sandbox);
    try {
      await sandbox.unload();
      if (this.#closed || !sandbox.alive) throw new Error('not needed');
      this.#ready.push(sandbox);
    } catch {
      await sandbox.kill();
    } finally {
      this.#unloading.delete(sandbox);
    }
  }

  async #drain(): Promise<void> {
    await Promise.all([...this.#ready.splice(0), ...this.#unloading].map((sandbox) => sandbox.kill().catch(() => {})));
  }

  /** The memory snapshot of base image `id`, for decoding patches. */
  async baseSnapshot(id: string): Promise<Uint8Array> {
    return new Uint8Array(await readFile((await this.#baseFile(id)).path));
  }

  /**
   * A machine's image file, in pieces to write one after the other; its memory is stored as a
   * patch on its base. Every machine a runtime holds runs this build's kernel: a restore upgraded
   * any other.
   */
  async encode(image: TakenImage, lost: Array<{ name: string; reason: string }>): Promise<Uint8Array[]> {
    const files = image.files;
    const meta = { ...image.meta, kernel: readKernelPackage().id };
    try {
      if ('patch' in image) return await encodeImageParts({ base: image.base, memory: image.patch, files, meta }, lost);
      const base = await this.base();
      return await encodeImageParts({ base: base.id, memory: makeMemoryPatch(image.snapshot, await this.baseSnapshot(base.id)), files, meta }, lost);
    } finally {
      // The image crossed from the sandbox: tens of MiB, garbage once encoded.
      collectWhenQuiet();
    }
  }

  /** The memory file of base `id`: the current base's, or an older one's, made from its image when missing. */
  async #baseFile(id: string): Promise<BaseFile> {
    // A machine made before an upgrade needs only its own base: the current one is not made for it.
    if (id === this.#currentBaseId()) return (await this.base()).file;
    let file = this.#olderBases.get(id);
    if (!file) {
      file = this.#olderBaseFile(id);
      this.#olderBases.set(id, file);
      file.catch(() => this.#olderBases.delete(id));
    }
    return file;
  }

  async #olderBaseFile(id: string): Promise<BaseFile> {
    const path = this.#basePath(id);
    const bytes = await this.#shelved(id, () =>
      readFile(path).catch(() => {
        throw new Error(`the base image ${id} that this machine's snapshot needs is missing (${path})`);
      }),
    );
    const image = new Uint8Array(bytes);
    return this.#memoryFile(id, image, (await readImageFiles(image, this.pyodideVersion)).header);
  }

  /**
   * The plain copy of a stored base's memory, which sandboxes read: when its hash is the image's,
   * the memory need not be decompressed here at all; else it is written again from the image.
   */
  async #memoryFile(id: string, image: Uint8Array, header: ImageHeader): Promise<BaseFile> {
    const file = { id, path: join(this.#memoryDir, `${id}.snapshot`) };
    if (!header.memorySha256 || (await sha256Of(file.path)) !== header.memorySha256) {
      await mkdir(this.#memoryDir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(file.path, (await readImage(image, this.pyodideVersion)).memory);
    }
    return file;
  }

  /** The id of the base this build makes for this Pyodide: it changes with the kernel and the sandbox process. */
  #currentBaseId(): string {
    this.#baseId ??= createHash('sha256')
      .update(this.pyodideVersion)
      .update(readKernelPackage().id)
      .update(readFileSync(join(this.#childDir, 'main.js')))
      .digest('hex')
      .slice(0, 16);
    return this.#baseId;
  }

  /** The file name a build ships its base under (`shippedBaseName`). */
  get shippedBase(): string {
    return shippedBaseName(this.pyodideVersion, this.#currentBaseId());
  }

  /** The base image's file, made when missing. */
  async baseImageFile(): Promise<string> {
    await this.base();
    return this.#basePath(this.#currentBaseId());
  }

  base(): Promise<BaseImage> {
    this.#base ??= this.#loadOrMakeBase();
    this.#base.catch(() => (this.#base = undefined));
    return this.#base;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#demand.close();
    await this.#drain();
  }

  #refill(): void {
    // Processes another tenant's machines left serve only that tenant's: they do not count.
    while (!this.#closed && this.#ready.filter((ready) => ready.served === 0 || ready.tenant === undefined).length < this.#poolSize) {
      const sandbox = this.#spawn({ network: false });
      this.#ready.push(sandbox);
      this.base()
        .then((base) => sandbox.prefetch(base.file))
        .catch(() => {});
    }
  }

  /** A ready process for a machine of `tenant`: one its machines left (already warm), else one that never held a machine. */
  #takeReady(tenant: string | undefined): SandboxProcess | undefined {
    this.#ready = this.#ready.filter((ready) => ready.alive);
    const left = this.#ready.findIndex((ready) => ready.served > 0 && ready.tenant === tenant);
    const at = left >= 0 ? left : this.#ready.findIndex((ready) => ready.served === 0);
    return at >= 0 ? this.#ready.splice(at, 1)[0] : undefined;
  }

  /** Import names machines may auto-install; none when the package index cannot be read. */
  #importNames(): Promise<ImportNames> {
    this.#imports ??= this.packages
      .importNames()
      .catch(() => ({}))
      .then((byImport) => {
        const names = Object.keys(byImport).sort();
        return { id: createHash('sha256').update(names.join('\n')).digest('hex').slice(0, 16), names };
      });
    return this.#imports;
  }

  /** A new sandbox process with no machine loaded yet. */
  #spawn(placement: SandboxPlacement): SandboxProcess {
    // The package cache and base memory are mounted into every sandbox, so they must exist first.
    mkdirSync(this.packages.dir, { recursive: true, mode: 0o755 });
    mkdirSync(this.#memoryDir, { recursive: true, mode: 0o700 });
    const launch = {
      childDir: this.#childDir,
      pyodideDir: this.#pyodideDir,
      packageDir: this.packages.dir,
      memoryDir: this.#memoryDir,
      ...placement,
    };
    return new SandboxProcess(launch, this.isolation, this.#mailboxes, isDefaultPlacement(placement));
  }

  /** `ensure` with the shelf's copy of base `id` in place first, and what it made shelved (see BaseImageShelf). */
  #shelved<T>(id: string, ensure: () => Promise<T>): Promise<T> {
    return this.#shelf ? this.#shelf.provide(`${this.#shelfFolder}/base-${id}`, this.#basePath(id), ensure) : ensure();
  }

  #loadOrMakeBase(): Promise<BaseImage> {
    const id = this.#currentBaseId();
    return this.#shelved(id, () => this.#readOrMakeBase(id));
  }

  async #readOrMakeBase(id: string): Promise<BaseImage> {
    const kernel = readKernelPackage();
    const path = this.#basePath(id);
    const stored = (await readFile(path).catch(() => null)) ?? (await this.#shippedBase(id, path));
    if (stored) {
      try {
        const bytes = new Uint8Array(stored);
        const { header, files } = await readImageFiles(bytes, this.pyodideVersion);
        if (header.base === null) {
          const file = await this.#memoryFile(id, bytes, header);
          return { id, files, meta: header.meta, file, freshPatch: identityPatch(await snapshotHeader(file.path), header.memoryLength) };
        }
      } catch {
        // Damaged: make it again below.
      }
    }
    // Boot a machine cold (a few seconds, once per version) and keep its image.
    const sandbox = this.#spawn({ network: false });
    try {
      await sandbox.load(BASE_CONFIG, { kernel: kernel.files });
      const { image } = await (await sandbox.snapshot()).image;
      if (!('snapshot' in image)) throw new Error('a cold boot returned a patch');
      const { snapshot, files } = image;
      const meta = { ...image.meta, kernel: kernel.id };
      const base = await this.#withMemoryFile(id, { snapshot, files, meta });
      await mkdir(this.#cacheDir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(path, await encodeImage({ base: null, memory: snapshot, files, meta }));
      return base;
    } finally {
      await sandbox.kill();
    }
  }

  /**
   * The base this build ships beside its sandbox process (`npm run build` makes it), put in the
   * cache, where machines made on it find it after an upgrade too: a fresh data dir's first
   * machine then starts in a second rather than boot Pyodide cold. A build without it makes its own.
   */
  async #shippedBase(id: string, path: string): Promise<Buffer | null> {
    const shipped = await readFile(join(this.#childDir, shippedBaseName(this.pyodideVersion, id))).catch(() => null);
    if (!shipped) return null;
    await mkdir(this.#cacheDir, { recursive: true, mode: 0o700 });
    await writeFileAtomic(path, shipped);
    return shipped;
  }

  /** The base with its memory as a plain file (written once per base), for sandboxes to read. */
  async #withMemoryFile(id: string, image: MachineImage): Promise<BaseImage> {
    const snapshotPath = join(this.#memoryDir, `${id}.snapshot`);
    // Restores trust this file as the base: written again when missing or not exactly the base.
    const onDisk = await readFile(snapshotPath).catch(() => null);
    if (!onDisk || Buffer.compare(onDisk, image.snapshot) !== 0) {
      await mkdir(this.#memoryDir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(snapshotPath, image.snapshot);
    }
    const header = image.snapshot.subarray(0, heapOffset(image.snapshot));
    // A copy: after IPC, the files may be a view into the snapshot's buffer, which must not stay.
    return { id, files: image.files.slice(), meta: image.meta, file: { id, path: snapshotPath }, freshPatch: identityPatch(header, image.snapshot.length) };
  }

  #basePath(id: string): string {
    return join(this.#cacheDir, `base-${id}.image`);
  }
}

/** The file name of a base image shipped beside the sandbox process. */
export function shippedBaseName(pyodideVersion: string, id: string): string {
  return `base-${pyodideVersion}-${id}.image`;
}

function isDefaultPlacement(placement: SandboxPlacement): boolean {
  return !placement.network && !placement.workspace;
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
