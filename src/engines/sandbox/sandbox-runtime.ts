import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readKernelPackage } from '../../kernel/kernel-package.ts';
import type { BaseImageShelf } from '../base-image-shelf.ts';
import { collectWhenQuiet } from '../../platform/garbage-collection.ts';
import { DEFAULT_POOL_IDLE_SECONDS } from '../engine.ts';
import { PhaseClock } from '../../platform/phase-timings.ts';
import { BaseImages } from './base-images.ts';
import { detectIsolation, type Isolation } from './isolation.ts';
import { encodeImageParts, ImageChangedError, readImage, readImageFile, type ImageFile } from './machine-image-file.ts';
import { makeMemoryPatch } from './memory-patch.ts';
import type { ImportNames, KernelFiles, LoadImage, MachineConfig, MachineImage, SandboxMount, TakenImage } from './protocol.ts';
import { pyodideDir, type PyodideRuntime } from './pyodide-runtimes.ts';
import { sandboxChildDir } from './sandbox-assets.ts';
import { SandboxPool } from './sandbox-pool.ts';
import { SandboxProcess } from './sandbox-process.ts';
import { PackageCache, type PackageSource } from './package-cache.ts';

/** The base image's machine boots with these limits. */
const BASE_CONFIG: MachineConfig = { memoryMb: 512, outputLimit: 1 << 20 };

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

/**
 * What all sandbox machines of one manager share: the isolation found on this host, the base
 * images (`BaseImages`), the packages, and the pool of processes (`SandboxPool`), so that creating
 * or swapping in a machine does not wait for a process to start. A process holds one machine at a
 * time, on an interpreter of its own, which keeps a warm machine's memory to its own; a machine
 * swapped out leaves its process to the next machine of the same tenant (`release`).
 */
export class SandboxRuntime {
  readonly isolation: Isolation = detectIsolation();
  readonly pyodide: PyodideRuntime;
  readonly pyodideVersion: string;
  readonly #childDir = sandboxChildDir();
  readonly #pyodideDir: string;
  /** Each sandbox process's mailbox folder (mailbox.ts). */
  readonly #mailboxes: string;
  readonly packages: PackageCache;
  readonly bases: BaseImages;
  readonly #pool: SandboxPool;
  #imports?: Promise<ImportNames>;

  constructor(options: SandboxRuntimeOptions) {
    this.pyodide = options.pyodide;
    this.pyodideVersion = options.pyodide.version;
    this.#pyodideDir = pyodideDir(options.pyodide);
    // One server owns a data dir: the mailboxes there are of sandboxes a server before it left behind.
    this.#mailboxes = join(options.cacheDir, 'mailboxes');
    rmSync(this.#mailboxes, { recursive: true, force: true });
    this.packages = new PackageCache(join(options.cacheDir, 'packages'), options.packageSource);
    this.bases = new BaseImages({
      cacheDir: options.cacheDir,
      pyodideVersion: this.pyodideVersion,
      childDir: this.#childDir,
      ...(options.baseImages ? { shelf: options.baseImages } : {}),
      shelfFolder: options.pyodide.cacheFolder,
      coldBoot: () => this.#coldBoot(),
    });
    this.#pool = new SandboxPool({
      size: options.poolSize ?? 1,
      idleMs: (options.poolIdleSeconds ?? DEFAULT_POOL_IDLE_SECONDS) * 1000,
      start: () => {
        const sandbox = this.#spawn({ network: false });
        this.bases
          .current()
          .then((base) => sandbox.prefetch(base.file))
          .catch(() => {});
        return sandbox;
      },
    });
  }

  /** Starts filling the pool now rather than once machines are made or swapped in. */
  prewarm(): void {
    this.#pool.prewarm();
  }

  /** Sandbox processes waiting in the pool, warmed up on the base. */
  get pooled(): number {
    return this.#pool.ready;
  }

  /** A process holding a fresh machine with `config`'s limits. */
  async fresh(placement: SandboxPlacement, config: MachineConfig): Promise<SandboxProcess> {
    const base = await this.bases.current();
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
        ? { patch: memory, base: await this.bases.file(header.base), files, meta }
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
    const sandbox = (pooled ? this.#pool.take(placement.tenant) : undefined) ?? this.#spawn(placement);
    sandbox.tenant = placement.tenant;
    try {
      await sandbox.load(config, { ...source, importNames: await this.#importNames() }, imageFile);
      return sandbox;
    } catch (error) {
      await sandbox.kill();
      throw error;
    } finally {
      if (pooled) this.#pool.demanded();
      // The image crossed to the sandbox, and a first base was built: tens of MiB now garbage.
      collectWhenQuiet();
    }
  }

  /** The machine of `sandbox` is done with it: the pool keeps the process for the next machine, or ends it (`SandboxPool.release`). */
  release(sandbox: SandboxProcess): Promise<void> {
    return this.#pool.release(sandbox);
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
      const base = await this.bases.current();
      return await encodeImageParts({ base: base.id, memory: makeMemoryPatch(image.snapshot, await this.bases.snapshot(base.id)), files, meta }, lost);
    } finally {
      // The image crossed from the sandbox: tens of MiB, garbage once encoded.
      collectWhenQuiet();
    }
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  /** A machine booted cold with this build's kernel, and its whole image: how a base is made. */
  async #coldBoot(): Promise<MachineImage> {
    const kernel = readKernelPackage();
    const sandbox = this.#spawn({ network: false });
    try {
      await sandbox.load(BASE_CONFIG, { kernel: kernel.files });
      const { image } = await (await sandbox.snapshot()).image;
      if (!('snapshot' in image)) throw new Error('a cold boot returned a patch');
      return { snapshot: image.snapshot, files: image.files, meta: { ...image.meta, kernel: kernel.id } };
    } finally {
      await sandbox.kill();
    }
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
    mkdirSync(this.bases.memoryDir, { recursive: true, mode: 0o700 });
    const launch = {
      childDir: this.#childDir,
      pyodideDir: this.#pyodideDir,
      packageDir: this.packages.dir,
      memoryDir: this.bases.memoryDir,
      ...placement,
    };
    return new SandboxProcess(launch, this.isolation, this.#mailboxes, isDefaultPlacement(placement));
  }
}

function isDefaultPlacement(placement: SandboxPlacement): boolean {
  return !placement.network && !placement.workspace;
}
