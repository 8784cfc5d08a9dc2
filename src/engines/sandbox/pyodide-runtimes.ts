import { createRequire } from 'node:module';
import { dirname } from 'node:path';

/**
 * A Pyodide build that Perennial ships. A memory snapshot loads only into the build that made it,
 * so a build stays in this table (under an npm alias of its own) for as long as machines may have
 * been made on it: a machine runs on the build its snapshot names until it is upgraded.
 */
export interface PyodideRuntime {
  /** Pyodide's version, as snapshots record it. */
  version: string;
  /** The version of the Python it runs. */
  python: string;
  /** The npm package that holds it. */
  packageName: string;
  /** Its base images and packages, within the data dir's `engines/sandbox/`. */
  cacheFolder: string;
}

/** Newest first: new sandbox machines run the first. */
const RUNTIMES: readonly PyodideRuntime[] = [
  { version: '314.0.7', python: '3.14.2', packageName: 'pyodide', cacheFolder: 'pyodide-314.0.7' },
  // Where every build before 0.2.0 kept it.
  { version: '0.29.0', python: '3.13.2', packageName: 'pyodide-0.29', cacheFolder: '.' },
];

/** The build new sandbox machines run. */
export const CURRENT_PYODIDE = RUNTIMES[0]!;

/** Every build this Perennial can run, newest first. */
export function pyodideRuntimes(): readonly PyodideRuntime[] {
  return RUNTIMES;
}

/** The shipped build of that version, if any. */
export function pyodideRuntime(version: string): PyodideRuntime | undefined {
  return RUNTIMES.find((runtime) => runtime.version === version);
}

/** The folder of a build's package, which its sandbox processes read (and bubblewrap mounts). */
export function pyodideDir(runtime: PyodideRuntime): string {
  return dirname(createRequire(import.meta.url).resolve(`${runtime.packageName}/package.json`));
}

/** The version a build's package says it is; the table must agree (a test checks it). */
export function installedPyodideVersion(runtime: PyodideRuntime): string {
  return (createRequire(import.meta.url)(`${runtime.packageName}/package.json`) as { version: string }).version;
}
