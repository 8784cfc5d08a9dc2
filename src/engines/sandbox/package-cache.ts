import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import { CodedError } from '../../platform/coded-error.ts';

/** Where packages come from: a Pyodide lock file, and the folder or URL its wheels live at. */
export interface PackageSource {
  /** A path or http(s) URL of a `pyodide-lock.json`. */
  lockFile: string;
  /** A folder or http(s) URL holding the lock file's wheels. */
  baseUrl: string;
}

/** One package of a Pyodide lock file (the fields Perennial uses). */
export interface LockPackage {
  name: string;
  version: string;
  file_name: string;
  sha256: string;
  imports: string[];
  depends: string[];
}

interface Lockfile {
  info: { version?: string; python?: string };
  packages: Record<string, LockPackage>;
}

/** A package that is unknown, or that cannot be had (offline, damaged). */
export class PackageError extends CodedError {
  static override readonly errorCode = 'PackageUnavailable';
}

const isUrl = (location: string) => /^https?:\/\//.test(location);

/**
 * Pyodide packages for sandbox machines. Wheels are fetched outside the sandbox, checked against
 * the lock file's sha256, and kept in a cache folder that sandboxes see read-only.
 */
export class PackageCache {
  #lock?: Promise<Lockfile>;

  constructor(
    readonly dir: string,
    readonly source: PackageSource,
  ) {}

  /** Import names the lock file knows, each with its package: `{"bs4": "beautifulsoup4"}`. */
  async importNames(): Promise<Record<string, string>> {
    const lock = await this.#lockfile();
    const names: Record<string, string> = {};
    for (const pkg of Object.values(lock.packages)) for (const name of pkg.imports ?? []) names[name] = pkg.name;
    return names;
  }

  /**
   * The packages to install for `requested` (package names, or import names), dependencies first,
   * skipping those in `installed`.
   */
  async resolve(requested: string[], installed: Iterable<string> = []): Promise<LockPackage[]> {
    const lock = await this.#lockfile();
    const byImport = await this.importNames();
    const have = new Set([...installed].map(normalize));
    const order: LockPackage[] = [];
    const visiting = new Set<string>();
    const visit = (wanted: string, from?: string) => {
      const key = normalize(wanted);
      const pkg = lock.packages[key] ?? lock.packages[normalize(byImport[wanted] ?? '')];
      if (!pkg) {
        const hint = from ? ` (a dependency of ${from})` : '';
        throw new PackageError(`Unknown package "${wanted}"${hint}: it is not in the package index ${this.source.lockFile}`);
      }
      const id = normalize(pkg.name);
      if (have.has(id) || visiting.has(id)) return;
      visiting.add(id);
      for (const dependency of pkg.depends ?? []) visit(dependency, pkg.name);
      have.add(id);
      order.push(pkg);
    };
    for (const name of requested) visit(name);
    return order;
  }

  /** Paths of the packages' wheels in the cache, fetching the missing ones. */
  async ensure(packages: LockPackage[]): Promise<string[]> {
    await mkdir(this.dir, { recursive: true, mode: 0o755 });
    const paths: string[] = [];
    for (const pkg of packages) {
      const path = join(this.dir, pkg.file_name);
      if (!existsSync(path)) await this.#fetch(pkg, path);
      paths.push(path);
    }
    return paths;
  }

  async #fetch(pkg: LockPackage, path: string): Promise<void> {
    const location = isUrl(this.source.baseUrl)
      ? new URL(pkg.file_name, this.source.baseUrl.replace(/\/?$/, '/')).href
      : join(this.source.baseUrl, pkg.file_name);
    let bytes: Uint8Array;
    try {
      bytes = await load(location);
    } catch (error) {
      throw new PackageError(
        `Package "${pkg.name}" ${pkg.version} is not in the package cache and could not be fetched from ${location} (${(error as Error).message}). ` +
          `To provide it offline, put ${pkg.file_name} in ${this.dir}, or point PERENNIAL_PYODIDE_PACKAGES at a folder of Pyodide wheels`,
      );
    }
    const digest = createHash('sha256').update(bytes).digest('hex');
    if (pkg.sha256 && digest !== pkg.sha256) {
      throw new PackageError(`Package "${pkg.name}": ${location} does not match the lock file's sha256 (got ${digest}); it was not installed`);
    }
    await writeFileAtomic(path, bytes, 0o644);
  }

  #lockfile(): Promise<Lockfile> {
    this.#lock ??= load(this.source.lockFile).then(
      (bytes) => {
        const lock = JSON.parse(new TextDecoder().decode(bytes)) as Lockfile;
        if (!lock.packages || typeof lock.packages !== 'object') throw new Error('it has no "packages"');
        // Keys are normalized names; index them so either spelling finds a package.
        for (const pkg of Object.values(lock.packages)) lock.packages[normalize(pkg.name)] ??= pkg;
        return lock;
      },
      (error: Error) => {
        throw new PackageError(`The package index ${this.source.lockFile} cannot be read: ${error.message}`);
      },
    );
    this.#lock.catch(() => (this.#lock = undefined));
    return this.#lock;
  }
}

/** PEP 503 normalization, as lock file keys use it. */
function normalize(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

async function load(location: string): Promise<Uint8Array> {
  if (!isUrl(location)) return new Uint8Array(await readFile(location));
  const response = await fetch(location, { signal: AbortSignal.timeout(120_000) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}
