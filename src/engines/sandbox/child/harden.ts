/**
 * Runs first in every thread of a sandbox process (each thread has its own builtins).
 * - Under the Node permission model `process.binding()` throws, but Emscripten's NODEFS setup
 *   needs `process.binding('constants')`: provide just that.
 * - Emscripten implements `os.system()` with `child_process.spawnSync(shell)`. Outside the
 *   permission model that would run a host shell; inside it, it throws through wasm and kills
 *   Pyodide. Make it answer exit status 127 instead.
 * - The permission model does not cover signals. Bubblewrap's pid namespace hides host processes;
 *   where it is missing, `process.kill` would reach them, so it may signal only this process.
 * - A denied file call throws ERR_ACCESS_DENIED, which Emscripten's NODEFS (the /workspace
 *   mount) cannot turn into an errno, so it would kill Pyodide: present it as EACCES, which
 *   Python sees as PermissionError. Node 20 denies fsync outright under the permission model;
 *   the data is written already, so fsync becomes a no-op.
 * - The process may start threads (`--allow-worker`) for its own work: a snapshot's patch is made
 *   on one while the machine runs on. A thread would run without these guards (its own
 *   `process.kill`), so the code a machine runs gets a Worker that refuses, through `require`,
 *   `process.getBuiltinModule` and `import()` alike; only `startOwnWorker` holds the real one.
 * - Builtins a machine has no use for that reach past the other fences: `node:sqlite` (Node 22
 *   on) opens, attaches and writes database files at any path, ones the permission model refuses
 *   to `fs` included (measured on 22, 24 and 26); `node:ffi` (Node 26) calls native code, which
 *   the permission model refuses today. Every function they export refuses, by the same three ways.
 */
import { constants as fsConstants } from 'node:fs';
import { createRequire, isBuiltin, syncBuiltinESMExports } from 'node:module';
import { constants as osConstants } from 'node:os';
import type { Worker, WorkerOptions } from 'node:worker_threads';

const permission = (process as { permission?: unknown }).permission;
if (permission) {
  (process as unknown as { binding: (name: string) => unknown }).binding = (name: string) => {
    if (name === 'constants') return { fs: fsConstants, os: osConstants };
    throw new Error('process.binding is disabled in the sandbox');
  };
}
const require = createRequire(import.meta.url);
require('node:child_process').spawnSync = () => ({ status: 127, signal: null });

const fs = require('node:fs') as Record<string, unknown>;
for (const name of Object.keys(fs)) {
  const original = fs[name];
  if (!name.endsWith('Sync') || typeof original !== 'function') continue;
  const denialIsHarmless = name === 'fsyncSync' || name === 'fdatasyncSync';
  fs[name] = function (this: unknown, ...args: unknown[]) {
    try {
      return original.apply(this, args);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ERR_ACCESS_DENIED') throw error;
      if (denialIsHarmless) return undefined;
      throw Object.assign(new Error(`EACCES: permission denied (${name})`), { code: 'EACCES', errno: -13 });
    }
  };
}

const ownPid = process.pid;
const kill = process.kill.bind(process);
const hostPid = process.ppid;

/**
 * Whether the process that started this one still runs (under bubblewrap, which ends with the
 * host, this process is its namespace's first and its parent is outside: always yes). Signal 0
 * only asks; on Windows too.
 */
export function hostAlive(): boolean {
  try {
    kill(hostPid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
const guarded = ((pid: number, signal?: string | number) => {
  if (pid !== ownPid) throw new Error('process.kill is disabled in the sandbox');
  return kill(pid, signal);
}) as typeof process.kill;
Object.defineProperty(process, 'kill', { value: guarded, writable: false, configurable: false });
Object.defineProperty(process, '_kill', { value: () => -1, writable: false, configurable: false });

const workerThreads = require('node:worker_threads') as { Worker: new (path: string, options?: WorkerOptions) => Worker };
const OwnWorker = workerThreads.Worker;
workerThreads.Worker = function Worker() {
  throw new Error('threads are disabled in the sandbox');
} as unknown as typeof OwnWorker;
for (const name of ['node:sqlite', 'node:ffi'].filter((name) => isBuiltin(name))) {
  const exports = require(name) as Record<string, unknown>;
  for (const key of Object.keys(exports).filter((key) => typeof exports[key] === 'function')) {
    Object.defineProperty(exports, key, {
      value: function closed() {
        throw new Error(`${name} is disabled in the sandbox (${key})`);
      },
      writable: false,
      configurable: false,
    });
  }
}
syncBuiltinESMExports();

/** A thread of the sandbox's own, running the script at `path`. */
export function startOwnWorker(path: string, options?: WorkerOptions): Worker {
  return new OwnWorker(path, options);
}
