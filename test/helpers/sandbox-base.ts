import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readKernelPackage } from '../../src/kernel/kernel-package.ts';
import { MachineManager } from '../../src/machines/machine-manager.ts';
import { CURRENT_PYODIDE } from '../../src/engines/sandbox/pyodide-runtimes.ts';
import { sandboxChildDir } from '../../src/engines/sandbox/sandbox-assets.ts';

const TEMPLATES = fileURLToPath(new URL('../../.cache/test-sandbox-bases/', import.meta.url));

let template: Promise<string> | undefined;

/**
 * Gives a fresh data dir the sandbox engine's cache of a data dir that has made its base image:
 * a cold boot of Pyodide (~6 s) that every test's data dir would otherwise pay at its first
 * sandbox machine. The files are copies of one template per build of the kernel and the sandbox
 * process: copies, not links, since tests damage a base's files in place to see it mended. A data
 * dir whose engine wants another base makes it, as any would.
 */
export async function seedSandboxBase(dataDir: string): Promise<void> {
  template ??= sandboxTemplate();
  await cp(await template, join(dataDir, 'engines', 'sandbox', CURRENT_PYODIDE.cacheFolder), { recursive: true });
}

async function sandboxTemplate(): Promise<string> {
  const key = createHash('sha256')
    .update(CURRENT_PYODIDE.version)
    .update(readKernelPackage().id)
    .update(readFileSync(join(sandboxChildDir(), 'main.js')))
    .digest('hex')
    .slice(0, 16);
  const path = join(TEMPLATES, key);
  if (await readdir(path).catch(() => null)) return path;
  await mkdir(TEMPLATES, { recursive: true });
  const work = await mkdtemp(join(TEMPLATES, 'making-'));
  try {
    const manager = await MachineManager.open({ dataDir: work, defaultEngine: 'sandbox' });
    try {
      await manager.run((await manager.create()).name, '1');
    } finally {
      await manager.close();
    }
    // Another test process may have made it meanwhile: either is whole, and the first stays.
    await rename(join(work, 'engines', 'sandbox', CURRENT_PYODIDE.cacheFolder), path).catch(() => {});
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return path;
}
