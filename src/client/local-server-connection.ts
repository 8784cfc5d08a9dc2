import { spawn } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_MALLOC_ENV } from '../platform/malloc-env.ts';
import { isProcessAlive } from '../platform/process-liveness.ts';
import { readServerInfo, startedInBackground, type ServerInfo } from '../platform/server-info.ts';
import { VERSION } from '../shared/version.ts';
import type { EngineName, StopRequest } from '../shared/requests.ts';
import { HttpClient } from './http-client.ts';
import { CodedError } from '../platform/coded-error.ts';
import { prepareDataDir } from '../platform/data-dir.ts';
import { DataDirLock } from '../platform/data-dir-lock.ts';

/** How long a client waits for a server it started. */
const START_TIMEOUT_MS = 30_000;
/**
 * How long a server that runs and says where it listens may stay unreachable other than by
 * refusing connections (as one that stops does, saving its machines), once the one started here
 * gave up for it, before the client says so: a server that just started answers at once.
 */
const UNREACHABLE_FOR_MS = 3000;
/** A server started by a client stops after this long with nothing to do; machines are on disk. */
export const AUTO_SERVER_IDLE_SECONDS = 900;

export interface LocalConnectionOptions {
  /** Start the server when none runs. Default true. */
  autoStart?: boolean;
  /** For a server started here: swap machines out after this many idle seconds. */
  idleSeconds?: number;
  /** For a server started here: keep at most this many machines warm. */
  maxWarm?: number;
  /** For a server started here: the engine of machines created without one. */
  engine?: EngineName;
}

/** No local server runs on the data dir, and none could be started. */
export class LocalServerUnavailableError extends CodedError {
  static override readonly errorCode = 'ServerUnavailable';
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

/** A server a person started runs a Perennial older than this client's wire API needs. */
export class OlderServerError extends CodedError {
  static override readonly errorCode = 'ServerTooOld';
  constructor(dataDir: string, server: ServerInfo) {
    super(
      `The Perennial server of ${dataDir} (pid ${server.pid}, ${server.url}) is version ${server.version}, and this perennial (${VERSION}) needs ${apiLine(VERSION)} or newer. ` +
        `It was started by hand, so it is left running: stop it (Ctrl-C where it runs, or kill ${server.pid}; it saves every machine) and start it again with this version: perennial serve --data-dir ${dataDir}`,
    );
  }
}

/** How long a server that is asked to stop may take to save its machines. */
const STOP_TIMEOUT_MS = 120_000;

/**
 * The local server of `dataDir`: the running one, or one started now (unless `autoStart` is false).
 * A running server older than this client's wire API is replaced when a client started it in the
 * background (it saves every machine as it stops), and refused with what to do when a person did.
 */
export async function localServer(dataDir: string, options: LocalConnectionOptions = {}): Promise<ServerInfo> {
  let running = await runningServer(dataDir);
  if (running && isOlder(running.version, VERSION)) {
    if (!startedInBackground(running)) throw new OlderServerError(dataDir, running);
    await stopServer(running);
    running = await runningServer(dataDir);
  }
  if (running) return running;
  if (options.autoStart === false)
    throw new LocalServerUnavailableError(`No Perennial server runs on ${dataDir}; start one with: perennial serve --data-dir ${dataDir}`);
  return startServer(dataDir, options);
}

/** The server described by server.json, if it is alive and answers. */
export async function runningServer(dataDir: string): Promise<ServerInfo | null> {
  const probe = await probeServer(dataDir);
  return 'unreachable' in probe ? null : probe.running;
}

/** A server whose process runs and that does not answer: why, and whether it refuses connections (it stops). */
interface Unreachable {
  unreachable: string;
  server: ServerInfo;
  refused: boolean;
}

/** The server of server.json that answers, none, or one whose process runs but that does not answer, and why. */
async function probeServer(dataDir: string): Promise<{ running: ServerInfo | null } | Unreachable> {
  const info = await readServerInfo(dataDir);
  if (!info || !isProcessAlive(info.pid)) return { running: null };
  try {
    const response = await fetch(`${info.url}/health`, { signal: AbortSignal.timeout(5000) });
    return response.ok ? { running: info } : { unreachable: `it answered ${info.url}/health with HTTP ${response.status}`, server: info, refused: false };
  } catch (error) {
    // fetch says "fetch failed"; what failed is its cause (refused, reset, timed out, no route).
    const cause = (error as Error & { cause?: NodeJS.ErrnoException }).cause ?? (error as NodeJS.ErrnoException);
    return { unreachable: cause.message, server: info, refused: cause.code === 'ECONNREFUSED' };
  }
}

/**
 * Stops the local server of `dataDir` (it saves every machine first) and waits until it has gone;
 * answers the server it stopped, or null when none ran.
 */
export async function stopLocalServer(dataDir: string): Promise<ServerInfo | null> {
  const running = await runningServer(dataDir);
  if (running) await stopServer(running);
  return running;
}

/**
 * Stops a server (it saves every machine first) and waits until it has gone; `request` may name
 * the process the data dir goes to (a server before 0.2.2 releases it instead). It is asked over
 * HTTP, as every system allows; a server from before 0.2.1 is sent SIGTERM, which it saves on
 * where signals exist (on Windows that ends it without saving, as nothing else can).
 */
export async function stopServer(server: ServerInfo, request: StopRequest = {}): Promise<void> {
  const asked = await fetch(`${server.url}/v1/server/stop`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(request),
    signal: AbortSignal.timeout(5000),
  }).then(
    (response) => response.ok,
    () => false,
  );
  if (!asked) {
    try {
      process.kill(server.pid, 'SIGTERM');
    } catch {
      return; // gone already
    }
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (isProcessAlive(server.pid)) {
    if (Date.now() > deadline)
      throw new LocalServerUnavailableError(
        `The Perennial ${server.version} server (pid ${server.pid}) did not stop within ${STOP_TIMEOUT_MS / 1000} s; it may still be saving its machines`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** "0.2": the part of a version that changes with the wire API and the formats (0.x releases). */
function apiLine(version: string): string {
  return version.split('.').slice(0, 2).join('.');
}

/** Whether `version`'s wire API is older than `own`'s. */
function isOlder(version: string, own: string): boolean {
  const [major, minor] = version.split('.').map(Number);
  const [ownMajor, ownMinor] = own.split('.').map(Number);
  return major! < ownMajor! || (major === ownMajor && minor! < ownMinor!);
}

async function startServer(dataDir: string, options: LocalConnectionOptions): Promise<ServerInfo> {
  await prepareDataDir(dataDir);
  const deadline = Date.now() + START_TIMEOUT_MS;
  const args = [
    ...(options.idleSeconds ? ['--idle-seconds', String(options.idleSeconds)] : []),
    ...(options.maxWarm ? ['--max-warm', String(options.maxWarm)] : []),
    ...(options.engine ? ['--engine', options.engine] : []),
  ];
  const spawnServer = () => spawnDetachedServer(dataDir, args);
  let child = spawnServer();
  let unreachable: (Unreachable & { since: number }) | undefined;
  while (Date.now() < deadline) {
    const probe = await probeServer(dataDir);
    if ('running' in probe && probe.running) return probe.running;
    unreachable = 'unreachable' in probe ? { ...probe, since: unreachable?.since ?? Date.now() } : undefined;
    if (child.exitedAt !== undefined) {
      if (unreachable && !unreachable.refused && Date.now() - Math.max(unreachable.since, child.exitedAt) > UNREACHABLE_FOR_MS) break;
      // A server that exits while no other process owns the data dir failed to start: say why.
      if ((await DataDirLock.owner(dataDir)) === null && (await runningServer(dataDir)) === null) {
        const reason = failure(await readFile(child.log, 'utf8').catch(() => ''), child.logFrom);
        throw new LocalServerUnavailableError(`The Perennial server could not start on ${dataDir}: ${reason || 'it exited at once'} (its log: ${child.log})`);
      }
      // The data dir was still owned (another client's server is starting, or a stopping one has
      // not let go yet). Give that a moment, then try again; not while its owner runs and says
      // where it listens: another start cannot take the data dir from it.
      if (Date.now() - child.exitedAt > 1000 && !unreachable) child = spawnServer();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // A server that runs and says where it listens, which this client cannot reach: a firewall, a
  // proxy, another network namespace. Saying it did not start would send the person to a log that says it did.
  if (unreachable)
    throw new LocalServerUnavailableError(
      `The Perennial server of ${dataDir} runs (pid ${unreachable.server.pid}) and says it listens on ${unreachable.server.url}, but this client cannot reach it: ${unreachable.unreachable}; see ${join(dataDir, 'server.log')}`,
    );
  throw new LocalServerUnavailableError(
    `The Perennial server did not start on ${dataDir} within ${START_TIMEOUT_MS / 1000} s; see ${join(dataDir, 'server.log')}`,
  );
}

/** Why a server that exited at its start did: the last error in its log from that start. */
function failure(log: string, from: number): string {
  const lines = Buffer.from(log).subarray(from).toString().trim().split('\n');
  const error = lines.findLast((line) => /^(error|perennial):/.test(line)) ?? lines.at(-1) ?? '';
  return error.replace(/^(error|perennial): /, '');
}

/** A server started here: its log, where this start's lines begin, and when it exited. */
interface StartedServer {
  log: string;
  logFrom: number;
  exitedAt?: number;
}

function spawnDetachedServer(dataDir: string, extraArgs: string[]): StartedServer {
  const path = join(dataDir, 'server.log');
  const log = openSync(path, 'a', 0o600);
  const logFrom = fstatSync(log).size;
  const child = spawn(process.execPath, [cliPath(), '--data-dir', dataDir, 'serve', '--exit-when-idle', String(AUTO_SERVER_IDLE_SECONDS), ...extraArgs], {
    detached: true,
    stdio: ['ignore', log, log],
    env: serverEnv(),
  });
  const state: StartedServer = { log: path, logFrom };
  closeSync(log);
  child.once('exit', () => (state.exitedAt = Date.now()));
  child.unref();
  return state;
}

/** The environment of a server started here (and by the bench, to measure the same process). */
export function serverEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  // In VS Code's extension host the executable is Electron: run it as plain Node.
  return { ...SERVER_MALLOC_ENV, ...env, ELECTRON_RUN_AS_NODE: '1' };
}

/** The built CLI: beside this code in the bundle, or the last build from sources. */
function cliPath(): string {
  const candidates = [fileURLToPath(new URL('./cli.js', import.meta.url)), fileURLToPath(new URL('../../dist/cli.js', import.meta.url))];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new LocalServerUnavailableError('The perennial CLI is not built (run npm run build)');
  return found;
}
