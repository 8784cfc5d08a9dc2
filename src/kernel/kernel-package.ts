import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The folder that holds the kernel package (`perennial_kernel/`), to put on Python's path. The
 * build copies the package beside the bundle, so the same relative URL works from `src/` (tests,
 * tsx) and from `dist/`.
 */
export const KERNEL_ROOT = fileURLToPath(new URL('.', import.meta.url));

/** The kernel as a sandbox machine gets it: its modules' sources by file name, and an id of them all. */
export interface KernelPackage {
  id: string;
  files: Record<string, string>;
}

let kernelPackage: KernelPackage | undefined;

/** This build's kernel package, read once. Its id, recorded in a sandbox image, changes with any module. */
export function readKernelPackage(): KernelPackage {
  if (!kernelPackage) {
    const folder = new URL('./perennial_kernel/', import.meta.url);
    const names = readdirSync(folder)
      .filter((name) => name.endsWith('.py'))
      .sort();
    const files = Object.fromEntries(names.map((name) => [name, readFileSync(new URL(name, folder), 'utf8')]));
    const hash = createHash('sha256');
    for (const name of names) hash.update(`${name}\0${files[name]}\0`);
    kernelPackage = { id: hash.digest('hex').slice(0, 16), files };
  }
  return kernelPackage;
}
