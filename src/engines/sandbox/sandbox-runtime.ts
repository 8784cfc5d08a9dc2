import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KERNEL_PATH } from '../../kernel/kernel-path.ts';
import { writeFileAtomic } from '../../machines/atomic-file.ts';
import { detectIsolation, type Isolation, type SandboxLaunch } from './isolation.ts';
import { decodeImage, encodeImage, readImageHeader } from './machine-image-file.ts';
import type { MachineConfig, MachineImage } from './protocol.ts';
import { pyodideDir, pyodideVersion, sandboxChildDir } from './sandbox-assets.ts';
import { SandboxProcess } from './sandbox-process.ts';
import { PackageCache, type PackageSource } from './package-cache.ts';

/** Machines in the pool boot with these limits; `configure` sets each machine's own. */
const POOL_CONFIG: MachineConfig = { memoryMb: 512, outputLimit: 1 << 20 };

export interface SandboxRuntimeOptions {
  /** Where base images and the package cache are kept (`<data dir>/engines/sandbox`). */
  cacheDir: string;
  /** Sandbox processes kept ready with a fresh machine. Default 1. */
  poolSize?: number;
  /** Where packages come from; default the lock file Pyodide ships and its public CDN. */
  packageSource?: PackageSource;
}

/**
 * The package source from the environment: `PERENNIAL_PYODIDE_PACKAGES` (a folder or URL of
 * wheels; its own pyodide-lock.json is used when it has one) and `PERENNIAL_PYODIDE_LOCK`.
 */
export function defaultPackageSource(env: NodeJS.ProcessEnv = process.env): PackageSource {
  const wheels = env.PERENNIAL_PYODIDE_PACKAGES;
  const ownLock = wheels && !/^https?:/.test(wheels) && existsSync(join(wheels, 'pyodide-lock.json')) ? join(wheels, 'pyodide-lock.json') : undefined;
  return {
    lockFile: env.PERENNIAL_PYODIDE_LOCK || ownLock || join(pyodideDir(), 'pyodide-lock.json'),
    baseUrl: wheels || `https://cdn.jsdelivr.net/pyodide/v${pyodideVersion()}/full/`,
  };
}

/** Where a machine runs: the launch options that need a process of their own. */
export interface SandboxPlacement {
  network: boolean;
  workspace?: { hostPath: string; writable: boolean };
}

interface BaseImage {
  id: string;
  image: MachineImage;
}

/**
 * What all sandbox machines of one manager share: the isolation found on this host, the base
 * image (a fresh machine, booted once per Pyodide and kernel version, which every machine starts
 * from and every snapshot is a delta against), and a pool of processes that already hold a fresh
 * machine, so that creating or swapping in a machine does not wait for a process to start.
 */
export class SandboxRuntime {
  readonly isolation: Isolation = detectIsolation();
  readonly pyodideVersion = pyodideVersion();
  readonly #cacheDir: string;
  readonly #poolSize: number;
  readonly #childDir = sandboxChildDir();
  readonly #pyodideDir = pyodideDir();
  readonly packages: PackageCache;
  #base?: Promise<BaseImage>;
  #pool: Array<Promise<SandboxProcess>> = [];
  #closed = false;
  #imports?: Promise<Record<string, string>>;

  constructor(options: SandboxRuntimeOptions) {
    this.#cacheDir = options.cacheDir;
    this.#poolSize = options.poolSize ?? 1;
    this.packages = new PackageCache(join(options.cacheDir, 'packages'), options.packageSource ?? defaultPackageSource());
  }

  /** Starts filling the pool now rather than at the first sandbox machine. */
  prewarm(): void {
    this.#refill();
  }

  /**
   * A process holding a machine with `config`'s limits: fresh, or restored from `image`. Pooled
   * processes (which hold a fresh machine) serve both; a restore replaces the fresh machine.
   */
  async acquire(placement: SandboxPlacement, config: MachineConfig, image?: MachineImage): Promise<SandboxProcess> {
    let sandbox: SandboxProcess | undefined;
    if (isDefaultPlacement(placement)) {
      while (this.#pool.length && !sandbox) {
        const candidate = await this.#pool.shift()!.catch(() => undefined);
        if (candidate?.alive) sandbox = candidate;
      }
    }
    try {
      if (image) {
        sandbox ??= this.#spawn(placement);
        await sandbox.load(config, { image });
      } else {
        sandbox ??= await this.#freshProcess(placement, config);
      }
      await sandbox.configure(config.memoryMb, config.outputLimit, Object.keys(await this.#importNames()));
    } catch (error) {
      await sandbox?.kill();
      throw error;
    } finally {
      // Refill once this machine is up: on a small host a refill would compete with it for CPU.
      if (isDefaultPlacement(placement)) this.#refill();
    }
    return sandbox;
  }

  /** The memory snapshot of base image `id`, for decoding deltas. */
  async baseSnapshot(id: string): Promise<Uint8Array> {
    const current = await this.base();
    if (current.id === id) return current.image.snapshot;
    // An older base, from before an upgrade of Perennial: machines made then still need it.
    const path = this.#basePath(id);
    const bytes = await readFile(path).catch(() => {
      throw new Error(`the base image ${id} that this machine's snapshot needs is missing (${path})`);
    });
    return (await decodeImage(new Uint8Array(bytes), this.pyodideVersion, () => Promise.reject(new Error('nested base')))).snapshot;
  }

  /** Decodes a machine's snapshot file. */
  decode(bytes: Uint8Array): Promise<MachineImage> {
    return decodeImage(bytes, this.pyodideVersion, (id) => this.baseSnapshot(id));
  }

  async encode(image: MachineImage, lost: Array<{ name: string; reason: string }>): Promise<Uint8Array> {
    const base = await this.base();
    return encodeImage(image, { id: base.id, snapshot: base.image.snapshot }, lost);
  }

  base(): Promise<BaseImage> {
    this.#base ??= this.#loadOrMakeBase();
    this.#base.catch(() => (this.#base = undefined));
    return this.#base;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pool = this.#pool.splice(0);
    await Promise.all(pool.map((p) => p.then((sandbox) => sandbox.kill()).catch(() => {})));
  }

  #refill(): void {
    while (!this.#closed && this.#pool.length < this.#poolSize) {
      const next = this.#freshProcess({ network: false });
      next.catch(() => {});
      this.#pool.push(next);
    }
  }

  /** A new process holding a fresh machine; the pool's are made with the default config. */
  async #freshProcess(placement: SandboxPlacement, config = POOL_CONFIG): Promise<SandboxProcess> {
    const base = await this.base();
    const sandbox = this.#spawn(placement);
    try {
      await sandbox.load(config, { image: copyImage(base.image) });
    } catch (error) {
      await sandbox.kill();
      throw error;
    }
    return sandbox;
  }

  /** Import names machines may auto-install; none when the package index cannot be read. */
  #importNames(): Promise<Record<string, string>> {
    this.#imports ??= this.packages.importNames().catch(() => ({}));
    return this.#imports;
  }

  /** A new sandbox process with no machine loaded yet. */
  #spawn(placement: SandboxPlacement): SandboxProcess {
    // The package cache is mounted into every sandbox, so it must exist first.
    mkdirSync(this.packages.dir, { recursive: true, mode: 0o755 });
    const launch: SandboxLaunch = { childDir: this.#childDir, pyodideDir: this.#pyodideDir, packageDir: this.packages.dir, ...placement };
    return new SandboxProcess(launch, this.isolation);
  }

  async #loadOrMakeBase(): Promise<BaseImage> {
    const kernelSource = readFileSync(KERNEL_PATH, 'utf8');
    const id = createHash('sha256')
      .update(this.pyodideVersion)
      .update(kernelSource)
      .update(readFileSync(join(this.#childDir, 'worker.js')))
      .digest('hex')
      .slice(0, 16);
    const path = this.#basePath(id);
    const stored = await readFile(path).catch(() => null);
    if (stored) {
      try {
        const bytes = new Uint8Array(stored);
        if (readImageHeader(bytes).base === null) {
          return { id, image: await decodeImage(bytes, this.pyodideVersion, () => Promise.reject(new Error('nested base'))) };
        }
      } catch {
        // Damaged: make it again below.
      }
    }
    // Boot a machine cold (a few seconds, once per version) and keep its image.
    const sandbox = this.#spawn({ network: false });
    try {
      await sandbox.load(POOL_CONFIG, { kernelSource });
      const { image } = await sandbox.snapshot();
      const keep = copyImage(image);
      await mkdir(this.#cacheDir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(path, await encodeImage(image, null));
      return { id, image: keep };
    } finally {
      await sandbox.kill();
    }
  }

  #basePath(id: string): string {
    return join(this.#cacheDir, `base-${id}.image`);
  }
}

function isDefaultPlacement(placement: SandboxPlacement): boolean {
  return !placement.network && !placement.workspace;
}

/** Images travel by structured clone; the runtime's own copy must stay intact. */
function copyImage(image: MachineImage): MachineImage {
  return { snapshot: new Uint8Array(image.snapshot), files: new Uint8Array(image.files), meta: image.meta };
}
