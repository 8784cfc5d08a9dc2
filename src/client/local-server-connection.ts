import { spawn } from 'node:child_process';
import { existsSync, openSync, closeSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ServerInfo } from '../shared/types.ts';
import { ForeverVMClient } from './forevervm-client.ts';

/** How long a client waits for a server it started. */
const START_TIMEOUT_MS = 30_000;
/** A server started by a client stops after this long with nothing to do; machines are on disk. */
export const AUTO_SERVER_IDLE_SECONDS = 900;

export interface LocalConnectionOptions {
  /** Start the server when none runs. Default true. */
  autoStart?: boolean;
}

/** No local server runs on the data dir, and none could be started. */
export class LocalServerUnavailableError extends Error {
  static readonly errorCode = 'ServerUnavailable';
  constructor(message: string) {
    super(message);
    this.name = 'LocalServerUnavailableError';
  }
}

/**
 * A client of the local server that owns `dataDir`, found through its `server.json`; when none
 * runs, one is started (detached, logging to `server.log`) and waited for. Two clients starting
 * one at once are fine: the data dir's lock lets one server win, and both find it.
 */
export async function connectToLocalServer(dataDir: string, options: LocalConnectionOptions = {}): Promise<ForeverVMClient> {
  const running = await runningServer(dataDir);
  if (running) return new ForeverVMClient({ baseUrl: running.url, token: running.token });
  if (options.autoStart === false) throw new LocalServerUnavailableError(`No Perennial server runs on ${dataDir}; start one with: perennial serve --data-dir ${dataDir}`);
  const started = await startServer(dataDir);
  return new ForeverVMClient({ baseUrl: started.url, token: started.token });
}

/** The server described by server.json, if it is alive and answers. */
export async function runningServer(dataDir: string): Promise<ServerInfo | null> {
  let info: ServerInfo;
  try {
    info = JSON.parse(await readFile(join(dataDir, 'server.json'), 'utf8')) as ServerInfo;
  } catch {
    return null;
  }
  if (!isAlive(info.pid)) return null;
  try {
    const response = await fetch(`${info.url}/health`, { signal: AbortSignal.timeout(5000) });
    return response.ok ? info : null;
  } catch {
    return null;
  }
}

async function startServer(dataDir: string): Promise<ServerInfo> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const log = openSync(join(dataDir, 'server.log'), 'a', 0o600);
  const child = spawn(process.execPath, [cliPath(), '--data-dir', dataDir, 'serve', '--exit-when-idle', String(AUTO_SERVER_IDLE_SECONDS)], {
    detached: true,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  let exitedAt: number | undefined;
  child.once('exit', () => (exitedAt = Date.now()));
  child.unref();
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const info = await runningServer(dataDir);
    if (info) return info;
    // It exited: another client's server may own the data dir and appear shortly; else it failed.
    if (exitedAt !== undefined && Date.now() - exitedAt > 5000) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new LocalServerUnavailableError(`The Perennial server did not start on ${dataDir} within ${START_TIMEOUT_MS / 1000} s; see ${join(dataDir, 'server.log')}`);
}

/** The built CLI: beside this code in the bundle, or the last build from sources. */
function cliPath(): string {
  const candidates = [fileURLToPath(new URL('./cli.js', import.meta.url)), fileURLToPath(new URL('../../dist/cli.js', import.meta.url))];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new LocalServerUnavailableError('The perennial CLI is not built (run npm run build)');
  return found;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
