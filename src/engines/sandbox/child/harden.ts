/**
 * Runs first in every thread of a sandbox process (each thread has its own builtins).
 * - Under the Node permission model `process.binding()` throws, but Emscripten's NODEFS setup
 *   needs `process.binding('constants')`: provide just that.
 * - Emscripten implements `os.system()` with `child_process.spawnSync(shell)`. Outside the
 *   permission model that would run a host shell; inside it, it throws through wasm and kills
 *   Pyodide. Make it answer exit status 127 instead.
 */
import { constants as fsConstants } from 'node:fs';
import { createRequire } from 'node:module';
import { constants as osConstants } from 'node:os';

const permission = (process as { permission?: unknown }).permission;
if (permission) {
  (process as unknown as { binding: (name: string) => unknown }).binding = (name: string) => {
    if (name === 'constants') return { fs: fsConstants, os: osConstants };
    throw new Error('process.binding is disabled in the sandbox');
  };
}
createRequire(import.meta.url)('node:child_process').spawnSync = () => ({ status: 127, signal: null });
