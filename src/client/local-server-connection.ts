import { spawn } from 'node:child_process';
import { existsSync, openSync, closeSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MALLOC_ENV } from '../platform/malloc-env.ts';
import { isProcessAlive } from '../platform/process-liveness.ts';
import { readServerInfo, type ServerInfo } from '../platform/server-info.ts';
import type { EngineName } from '../shared/requests.ts';
import { HttpClient } from './http-client.ts';

/** How long a client waits for a server it started. */
const START_TIMEOUT_MS = 30_000;
/** A server started by a client stops after this long with nothing to do; machines are on disk. */
export const AUTO_SERVER_IDLE_SECONDS = 900;

export interface LocalConnectionOptions {
  /** Start the server when none runs. Default true. */
  autoStart?: boolean;
  /** For a server started here: swap machines out after this many idle seconds. */
  idleSeconds?: number;
  /** For a server started here: the engine of machines created without one. */
  engine?: EngineName;
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
export async function connectToLocalServer(dataDir: string, options: LocalConnectionOptions = {}): Promise<HttpClient> {
  const find = () => localServer(dataDir, options);
  const server = await find();
  // A long-lived client (perennial mcp) outlives a server that stopped when idle: find it again.
  return new HttpClient({
    baseUrl: server.url,
    token: server.token,
    refresh: async () => {
      const again = await find();
      return { baseUrl: again.url, token: again.token };
    },
  });
}

/** The local server of `dataDir`: the running one, or one started now (unless `autoStart` is false). */
export async function localServer(dataDir: string, options: LocalConnectionOptions = {}): Promise<ServerInfo> {
  const running = await runningServer(dataDir);
  if (running) return running;
  if (options.autoStart === false) throw new LocalServerUnavailableError(`No Perennial server runs on ${dataDir}; start one with: perennial serve --data-dir ${dataDir}`);
  return startServer(dataDir, options);
}

/** The server described by server.json, if it is alive and answers. */
export async function runningServer(dataDir: string): Promise<ServerInfo | null> {
  const info = await readServerInfo(dataDir);
  if (!info || !isProcessAlive(info.pid)) return null;
  try {
    const response = await fetch(`${info.url}/health`, { signal: AbortSignal.timeout(5000) });
    return response.ok ? info : null;
  } catch {
    return null;
  }
}

async function startServer(dataDir: string, options: LocalConnectionOptions): Promise<ServerInfo> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const deadline = Date.now() + START_TIMEOUT_MS;
  const args = [...(options.idleSeconds ? ['--idle-seconds', String(options.idleSeconds)] : []), ...(options.engine ? ['--engine', options.engine] : [])];
  const spawnServer = () => spawnDetachedServer(dataDir, args);
  let child = spawnServer();
  while (Date.now() < deadline) {
    const info = await runningServer(dataDir);
    if (info) return info;
    // It exited: the data dir was still owned (another client's server is starting, or a
    // stopping one has not let go yet). Give that a moment, then try again.
    if (child.exitedAt !== undefined && Date.now() - child.exitedAt > 1000) child = spawnServer();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new LocalServerUnavailableError(`The Perennial server did not start on ${dataDir} within ${START_TIMEOUT_MS / 1000} s; see ${join(dataDir, 'server.log')}`);
}

function spawnDetachedServer(dataDir: string, extraArgs: string[]): { exitedAt?: number } {
  const log = openSync(join(dataDir, 'server.log'), 'a', 0o600);
  const child = spawn(process.execPath, [cliPath(), '--data-dir', dataDir, 'serve', '--exit-when-idle', String(AUTO_SERVER_IDLE_SECONDS), ...extraArgs], {
    detached: true,
    stdio: ['ignore', log, log],
    env: serverEnv(),
  });
  closeSync(log);
  const state: { exitedAt?: number } = {};
  child.once('exit', () => (state.exitedAt = Date.now()));
  child.unref();
  return state;
}

/** The environment of a server started here (and by the bench, to measure the same process). */
export function serverEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  // In VS Code's extension host the executable is Electron: run it as plain Node.
  return { ...MALLOC_ENV, ...env, ELECTRON_RUN_AS_NODE: '1' };
}

/** The built CLI: beside this code in the bundle, or the last build from sources. */
function cliPath(): string {
  const candidates = [fileURLToPath(new URL('./cli.js', import.meta.url)), fileURLToPath(new URL('../../dist/cli.js', import.meta.url))];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new LocalServerUnavailableError('The perennial CLI is not built (run npm run build)');
  return found;
}
