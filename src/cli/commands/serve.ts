import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { commandOnPath } from '../../platform/command-on-path.ts';
import { runningServer, stopServer } from '../../client/local-server-connection.ts';
import { CodedError } from '../../platform/coded-error.ts';
import { collectWhenQuiet } from '../../platform/garbage-collection.ts';
import { restartWithMallocEnv } from '../../platform/malloc-env.ts';
import { startedInBackground } from '../../platform/server-info.ts';
import { TOKEN_FILE } from '../../server/access.ts';
import { LocalServer } from '../../server/local-server.ts';
import type { EngineName, StopRequest } from '../../shared/requests.ts';
import { DataDirLock } from '../../platform/data-dir-lock.ts';
import type { CliContext } from '../context.ts';
import { drainCommand } from './drain.ts';
import {
  clusterSettings,
  ClusterSettingsError,
  environmentSettings,
  flagSettings,
  readSettingsFile,
  SETTINGS_FILE,
  type ClusterSettings,
} from '../../cluster/cluster-settings.ts';
import { NodeCacheError, readNodeCache, withoutPassword, type NodeCache } from '../../platform/node-cache.ts';

export interface ServeCommandOptions {
  host?: string;
  port?: number;
  /** Engine of machines created without one. */
  engine?: EngineName;
  /** Timeout of an instruction sent without one. */
  timeout?: number;
  /** Stop after this many seconds with nothing going on (for servers that clients start). */
  exitWhenIdle?: number;
  /** Swap a machine out after this many seconds without instructions. */
  idleSeconds?: number;
  /** Keep at most this many machines warm. */
  maxWarm?: number;
  /** Empty the sandbox pool after this many seconds without a sandbox machine made or swapped in. */
  poolIdleSeconds?: number;
  /** Longest silence a waiting client sees, in seconds. */
  heartbeat?: number;
  /** How long a 2026-07-28 MCP call that can be a task runs before it becomes one, in seconds. */
  taskAfter?: number;
  /** How long an MCP call that runs code, and is not a task, takes at most before it answers, in seconds. */
  answerWithin?: number;
  /** A cluster's PostgreSQL database, its bucket, and this node's part: see `cluster-settings.ts`. */
  cluster?: string;
  store?: string;
  storeEndpoint?: string;
  storeRegion?: string;
  lease?: string;
  advertise?: string;
  /** The settings file; default the data dir's `settings.json`. */
  settings?: string;
  /** Memory kept free for the rest of the system, in MiB: machines stay warm, and a node takes machines, while more is available. */
  memoryReserve?: number;
  /** Instead of serving: empty the running node for maintenance, then stop it. */
  drain?: boolean;
}

/** Another server a person started serves the data dir. */
class ServerRunningError extends CodedError {
  static override readonly errorCode = 'ServerRunning';
}

/**
 * `perennial serve`: runs the local server until Ctrl-C, SIGTERM or a client's stop request, then saves every machine. A
 * server a command started in the background on the data dir makes way for a person's `serve`;
 * one a person started is left alone, and named.
 */
export async function serveCommand(ctx: CliContext, options: ServeCommandOptions): Promise<void> {
  if (options.drain) return drainCommand(ctx);
  restartWithMallocEnv();
  // Clients start their background server with an idle limit; a person's `serve` has none.
  const background = options.exitWhenIdle !== undefined;
  // A background server that finds another running leaves it be: a client started that one too.
  const running = background ? null : await runningServer(ctx.dataDir);
  if (running && !startedInBackground(running)) {
    throw new ServerRunningError(
      `A Perennial server already serves ${ctx.dataDir}: pid ${running.pid}, at ${running.url} (MCP: ${running.url}/mcp), started with perennial serve. ` +
        `Use it, stop it with: perennial stop --data-dir ${ctx.dataDir} (it saves every machine), or serve another data dir with --data-dir`,
    );
  }
  const given = clusterSettings(
    flagSettings({
      database: options.cluster,
      store: options.store,
      storeEndpoint: options.storeEndpoint,
      storeRegion: options.storeRegion,
      leaseSeconds: options.lease,
      advertiseUrl: options.advertise,
    }),
    environmentSettings(process.env),
    await readSettingsFile(options.settings ?? join(ctx.dataDir, SETTINGS_FILE)),
  );
  // A node's data dir serves its cluster again, as it did: a server of its own would fork its machines.
  // A client's background server becomes a node only where settings say so (the data dir's file).
  const node = await readNodeCache(ctx.dataDir);
  if (node && background && !given) throw new NodeCacheError(ctx.dataDir, node);
  const cluster = node ? nodeSettings(ctx.dataDir, node, given) : given;
  // The data dir is handed straight to this process: a client starting its own server meanwhile finds it taken.
  const handedLock = running ? DataDirLock.ownRecord() : undefined;
  if (running) {
    await stopServer(running, { handOverTo: handedLock });
    ctx.term.err.write(`perennial: took over from the server a command had started in the background (pid ${running.pid}); its machines are saved.\n`);
  }
  const server = await LocalServer.start({
    dataDir: ctx.dataDir,
    handedLock,
    host: options.host ?? node?.host,
    port: options.port ?? node?.port,
    idleSeconds: options.idleSeconds,
    maxWarm: options.maxWarm,
    ...(options.memoryReserve === undefined ? {} : { memory: { reserveBytes: options.memoryReserve * 2 ** 20 } }),
    poolIdleSeconds: options.poolIdleSeconds,
    defaultEngine: options.engine,
    defaultTimeoutSeconds: options.timeout,
    heartbeatMs: options.heartbeat === undefined ? undefined : options.heartbeat * 1000,
    taskAfterMs: options.taskAfter === undefined ? undefined : options.taskAfter * 1000,
    answerWithinMs: options.answerWithin === undefined ? undefined : options.answerWithin * 1000,
    background,
    cluster,
  });
  ctx.term.err.write(banner(ctx, server, options));
  // What starting up left (reading the data dir, compiling the bundle): an idle server keeps it otherwise.
  collectWhenQuiet();
  for (const engine of server.manager.engineStatus()) {
    if (engine.warning) ctx.term.err.write(`perennial: ${engine.name} engine: ${engine.warning}\n`);
  }
  const stop = await new Promise<StopRequest>((resolve) => {
    void server.stopRequested.then(resolve);
    process.once('SIGINT', () => resolve({}));
    process.once('SIGTERM', () => resolve({}));
    if (options.exitWhenIdle) {
      const limit = options.exitWhenIdle * 1000;
      setInterval(() => server.idleFor() >= limit && resolve({}), Math.min(limit, 10_000)).unref();
    }
  });
  ctx.term.err.write('Stopping: saving machines...\n');
  await server.close(stop.handOverTo);
}

/**
 * The settings a node's data dir is served with: those given, for the cluster it is the cache of
 * (another cluster would take this one's machines for its own); none given, the ones it recorded.
 */
function nodeSettings(dataDir: string, node: NodeCache, given: ClusterSettings | undefined): ClusterSettings | undefined {
  if (!given) return clusterSettings(node.cluster);
  if (withoutPassword(given.database) !== node.cluster.database || given.store.url !== node.cluster.store)
    throw new ClusterSettingsError(
      `The data dir ${dataDir} is the cache of the cluster ${node.cluster.database} with ${node.cluster.store}, and cannot serve another (${withoutPassword(given.database)} with ${given.store.url}): ` +
        'give this node a data dir of its own',
    );
  return given;
}

/** The folder of the package whose built CLI (dist/cli.js) runs, where `npm link` is run. */
function packageRoot(): string {
  return dirname(dirname(realpathSync(process.argv[1] ?? '.')));
}

/** What a person needs to connect: the URLs, where the token is, and a client line to copy. */
function banner(ctx: CliContext, server: LocalServer, options: ServeCommandOptions): string {
  const token = join(ctx.dataDir, TOKEN_FILE);
  const bearer = `"Authorization: Bearer $(cat ${token})"`;
  const node = server.cluster;
  return [
    `Perennial server listening on ${server.url} (data dir ${ctx.dataDir}; new machines: ${server.manager.defaultEngine}). Ctrl-C stops it and saves every machine.`,
    ...(node
      ? [
          `  A node of the cluster in ${node.directory.description}, its machines kept in ${node.store.description}; other nodes reach it at ${node.url}.`,
          `  Its data dir is a cache. Every node takes the same token (the first node's).`,
        ]
      : []),
    `  MCP: ${server.url}/mcp (streamable HTTP) or ${server.url}/sse (legacy SSE), with the header Authorization: Bearer <the token in ${token}>`,
    `  For example: claude mcp add --transport http perennial ${server.url}/mcp --header ${bearer}`,
    `  ForeverVM clients: FOREVERVM_BASE_URL=${server.url} FOREVERVM_TOKEN=$(cat ${token})`,
    ...(options.port ? [] : ['  The port changes at each start; --port keeps one.']),
    // Run from a clone (npm start), there is no `perennial` yet: the one way to get it, said where a newcomer looks.
    ...(commandOnPath('perennial')
      ? []
      : [`  No perennial command on your PATH yet: npm link in ${packageRoot()} puts it there; then, in another terminal: perennial exec 'x = 41; x + 1'`]),
    '',
  ].join('\n');
}
