/**
 * Runs first in every thread of a sandbox process (each thread has its own builtins).
 * - Under the Node permission model `process.binding()` throws, but Emscripten's NODEFS setup
 *   needs `process.binding('constants')`: provide just that.
 * - Emscripten implements `os.system()` with `child_process.spawnSync(shell)`. Outside the
 *   permission model that would run a host shell; inside it, it throws through wasm and kills
 *   Pyodide. Make it answer exit status 127 instead.
 * - The permission model does not cover signals. Bubblewrap's pid namespace hides host processes;
 *   where it is missing, `process.kill` would reach them, so it may signal only this process.
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

const ownPid = process.pid;
const kill = process.kill.bind(process);
const guarded = ((pid: number, signal?: string | number) => {
  if (pid !== ownPid) throw new Error('process.kill is disabled in the sandbox');
  return kill(pid, signal);
}) as typeof process.kill;
Object.defineProperty(process, 'kill', { value: guarded, writable: false, configurable: false });
Object.defineProperty(process, '_kill', { value: () => -1, writable: false, configurable: false });
