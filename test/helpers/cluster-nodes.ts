import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpClient } from '../../src/client/http-client.ts';
import type { MachineEvent } from '../../src/shared/types.ts';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ClusterDirectory } from '../../src/cluster/directory.ts';
import { startBucket, startPostgres, type Bucket, type Postgres } from './cluster-services.ts';
import { eventually, TEST_PYTHON, tempDataDir } from './machines.ts';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** A cluster's engines, as the nodes of one test share them. */
export interface ClusterEngines {
  database: string;
  bucket: Bucket;
  postgres: Postgres;
}

/** A `perennial serve` node, a process of its own, as an operator runs one. */
export interface ClusterNodeProcess {
  url: string;
  token: string;
  dataDir: string;
  child: ChildProcess;
  /** What it printed on stderr so far. */
  log(): string;
  client(): HttpClient;
  /** Collects the node's events (`/v1/events`) until `stop` is called. */
  events(): { seen: MachineEvent[]; stop(): void };
  /** Asks it to stop (it saves every machine and lets them go), and waits for it to exit. */
  stop(): Promise<void>;
  /** kill -9. */
  kill(): Promise<void>;
}

/** Starts a node of the cluster on a data dir of its own (or `dataDir`). */
export async function startNode(
  engines: ClusterEngines,
  {
    leaseSeconds = 3,
    engine = 'python',
    dataDir,
    port = 0,
    empty = false,
    again = false,
    flags = [],
    cli = CLI,
  }: {
    leaseSeconds?: number;
    engine?: string;
    dataDir?: string;
    port?: number;
    empty?: boolean;
    again?: boolean;
    flags?: string[];
    /** The build it runs: today's, or an earlier one's (test/fixtures/builds). */
    cli?: string;
  } = {},
): Promise<ClusterNodeProcess & { cleanup(): Promise<void> }> {
  // `empty`: without the sandbox base image the tests seed data dirs with, as a new node has none.
  const data = dataDir ? { dir: dataDir, cleanup: async () => {} } : await tempDataDir({ empty });
  // `again`: a node's data dir served again with no settings given, as an operator may restart it.
  const settings = again
    ? []
    : [
        '--port',
        String(port),
        '--engine',
        engine,
        '--cluster',
        engines.database,
        '--store',
        engines.bucket.url,
        '--store-endpoint',
        engines.bucket.endpoint,
        '--lease',
        String(leaseSeconds),
      ];
  const args = [cli, 'serve', '--data-dir', data.dir, ...settings, ...flags];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...engines.bucket.env, PERENNIAL_PYTHON: TEST_PYTHON },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = '';
  child.stderr!.on('data', (d: Buffer) => (printed += d));
  child.stdout!.on('data', (d: Buffer) => (printed += d));
  const url = await new Promise<string>((resolve, reject) => {
    const look = () => {
      const match = /listening on (http:\/\/[\d.]+:\d+)/.exec(printed);
      if (match) resolve(match[1]!);
    };
    child.stderr!.on('data', look);
    child.once('exit', (code) => reject(new Error(`the node exited (${code}) before it listened:\n${printed}`)));
  }).catch(async (error: unknown) => {
    // A node that did not start is no test's to stop: its data dir goes now.
    await data.cleanup();
    throw error;
  });
  const token = (await readFile(join(data.dir, 'server-token'), 'utf8')).trim();
  const exited = once(child, 'exit');
  // A node that fails on its own (neither stopped nor killed here) says why, in the test's output.
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal === null) console.error(`The node at ${url} exited with ${code}:\n${printed}`);
  });
  const clients: HttpClient[] = [];
  const client = () => {
    const made = new HttpClient({ baseUrl: url, token });
    clients.push(made);
    return made;
  };
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return {
    url,
    token,
    dataDir: data.dir,
    child,
    log: () => printed,
    client,
    events() {
      const seen: MachineEvent[] = [];
      const controller = new AbortController();
      void client()
        .events((event) => seen.push(event), controller.signal)
        .catch(() => {});
      return { seen, stop: () => controller.abort() };
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      await fetch(`${url}/v1/server/stop`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{}' });
      await exited;
    },
    kill,
    async cleanup() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
      await kill();
      await data.cleanup();
    },
  };
}

/** A cluster for one test file: PostgreSQL, a bucket, the nodes the tests start, all stopped at the end. */
export interface TestClusterNodes {
  engines: ClusterEngines;
  /** The cluster's directory, read as the nodes write it. */
  directory: ClusterDirectory;
  /** Starts a node (a process of its own), stopped with the others at the end. */
  node(options?: Parameters<typeof startNode>[1]): Promise<TestNode>;
  /** Waits until the machine's last commit holds instruction `seq`, as the directory has it. */
  committed(name: string, seq: number): Promise<void>;
  /** An MCP client of the node's /mcp, as an agent's. */
  mcpOn(node: TestNode): Promise<Client>;
  close(): Promise<void>;
}

export type TestNode = Awaited<ReturnType<typeof startNode>>;

/** Starts PostgreSQL and a bucket for a test file's cluster (its database `cluster`). */
export async function startTestCluster(): Promise<TestClusterNodes> {
  const postgres = await startPostgres();
  const bucket = await startBucket();
  const engines = { postgres, bucket, database: await postgres.database('cluster') };
  const directory = await ClusterDirectory.open(engines.database, 3);
  const nodes: TestNode[] = [];
  return {
    engines,
    directory,
    async node(options) {
      const started = await startNode(engines, options);
      nodes.push(started);
      return started;
    },
    committed: (name, seq) =>
      eventually(async () => ((await directory.locate(name))?.commit?.seq ?? -1) >= seq, 30_000, `a commit of ${name} holding instruction ${seq}`),
    async mcpOn(n) {
      const client = new Client({ name: 'cluster-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${n.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${n.token}` } } }));
      return client;
    },
    async close() {
      await Promise.all(nodes.map((n) => n.cleanup()));
      await directory.close();
      await bucket.stop();
      await postgres.stop();
    },
  };
}
