/**
 * Makes the current Pyodide build's base image (a fresh machine's memory, booted cold once) and
 * puts it beside the built sandbox process, which ships it: a fresh data dir's first sandbox
 * machine then starts from it (`SandboxRuntime`). Run by build.mjs after the bundles; a base
 * already there for this build is kept, and those of earlier builds are removed.
 */
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CURRENT_PYODIDE } from '../src/engines/sandbox/pyodide-runtimes.ts';
import { sandboxChildDir } from '../src/engines/sandbox/sandbox-assets.ts';
import { defaultPackageSource, SandboxRuntime } from '../src/engines/sandbox/sandbox-runtime.ts';

const childDir = sandboxChildDir();
const cacheDir = await mkdtemp(join(tmpdir(), 'perennial-base-'));
const runtime = new SandboxRuntime({ cacheDir, pyodide: CURRENT_PYODIDE, poolSize: 0, packageSource: defaultPackageSource(CURRENT_PYODIDE, true, {}) });
try {
  const name = runtime.bases.shippedName;
  for (const other of await readdir(childDir)) if (/^base-.*\.image$/.test(other) && other !== name) await rm(join(childDir, other));
  if (!existsSync(join(childDir, name))) {
    await copyFile(await runtime.bases.imageFile(), join(childDir, name));
    // Read by whoever runs the package, as the rest of it is.
    await chmod(join(childDir, name), 0o644);
  }
} catch (error) {
  // The sandbox engine then makes the base in each data dir, as the first machine there starts.
  console.warn(`build: no base image shipped, the sandbox could not make one here: ${(error as Error).message}`);
} finally {
  await runtime.close();
  await rm(cacheDir, { recursive: true, force: true });
}
