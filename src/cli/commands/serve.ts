import { LocalServer } from '../../server/local-server.ts';
import type { EngineName } from '../../shared/requests.ts';
import type { CliContext } from '../context.ts';

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
  /** Empty the sandbox pools after this many seconds without a sandbox machine made or swapped in. */
  poolIdleSeconds?: number;
  /** Longest silence a waiting client sees, in seconds. */
  heartbeat?: number;
}

/** `perennial serve`: runs the local server until Ctrl-C or SIGTERM, then saves every machine. */
export async function serveCommand(ctx: CliContext, options: ServeCommandOptions): Promise<void> {
  const server = await LocalServer.start({
    dataDir: ctx.dataDir,
    host: options.host,
    port: options.port,
    idleSeconds: options.idleSeconds,
    poolIdleSeconds: options.poolIdleSeconds,
    defaultEngine: options.engine,
    defaultTimeoutSeconds: options.timeout,
    heartbeatMs: options.heartbeat === undefined ? undefined : options.heartbeat * 1000,
    // Clients start their background server with an idle limit; a person's `serve` has none.
    background: options.exitWhenIdle !== undefined,
  });
  ctx.term.err.write(
    `Perennial server listening on ${server.url} (data dir ${ctx.dataDir}; new machines: ${server.manager.defaultEngine}). Ctrl-C stops it.\n`,
  );
  for (const engine of server.manager.engineStatus()) {
    if (engine.warning) ctx.term.err.write(`perennial: ${engine.name} engine: ${engine.warning}\n`);
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
    if (options.exitWhenIdle) {
      const limit = options.exitWhenIdle * 1000;
      setInterval(() => server.idleFor() >= limit && resolve(), Math.min(limit, 10_000)).unref();
    }
  });
  ctx.term.err.write('Stopping: saving machines...\n');
  await server.close();
}
