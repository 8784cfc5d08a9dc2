/**
 * Agents at once: N MCP clients over Streamable HTTP, each with a machine of its own (half
 * sandbox, half python), 50 `run-python-in-repl` calls each, against `perennial serve` in a
 * process of its own, while another client swaps every machine out twice. Prints each call's p50
 * and p99, calls per second, the calls that failed, and whether every machine counted all 50.
 * `npm run bench -- load` runs 8, 12 and 40 agents; PERENNIAL_BENCH_AGENTS=40 picks counts, and
 * PERENNIAL_BENCH_NODES=3 runs them on a cluster of three nodes.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ForeverVMClient } from '../src/client/forevervm-client.ts';
import { startNode, type TestNode } from '../test/helpers/cluster-nodes.ts';
import { startBucket, startPostgres } from '../test/helpers/cluster-services.ts';
import { median, ms, percentile, row } from './stats.ts';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const CALLS = 50;
const AGENTS = (process.env.PERENNIAL_BENCH_AGENTS ?? '8,12,40').split(',').map(Number);
/** PERENNIAL_BENCH_NODES=3: the same against a cluster of that many nodes. */
const NODES = Number(process.env.PERENNIAL_BENCH_NODES ?? 1);

interface Outcome {
  /** The first call after the machine was made (its first start), and the others. */
  first: number[];
  times: number[];
  failures: string[];
  counted: number;
}

/** One agent: its own connection and machine, then CALLS calls, each timed. */
async function agent(url: string, token: string, engine: 'sandbox' | 'python'): Promise<Outcome & { name: string }> {
  const client = new Client({ name: 'bench-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const outcome: Outcome = { first: [], times: [], failures: [], counted: 0 };
  try {
    const made = await client.callTool({ name: 'create-python-repl', arguments: { engine } });
    const name = (made.structuredContent as { replId: string }).replId;
    for (let i = 0; i < CALLS; i++) {
      const started = performance.now();
      try {
        const result = await client.callTool({ name: 'run-python-in-repl', arguments: { replId: name, pythonCode: 'n = globals().get("n", 0) + 1\nn' } });
        if (result.isError) outcome.failures.push(JSON.stringify(result.content).slice(0, 200));
        else (i === 0 ? outcome.first : outcome.times).push(performance.now() - started);
      } catch (error) {
        outcome.failures.push((error as Error).message);
      }
    }
    const last = await client.callTool({ name: 'run-python-in-repl', arguments: { replId: name, pythonCode: 'n' } });
    outcome.counted = Number((last.structuredContent as { value: string | null }).value ?? 0);
    return { ...outcome, name };
  } finally {
    await client.close();
  }
}

/** Where the agents connect: one server, or the nodes of a cluster (an agent to each in turn). */
interface Servers {
  urls: string[];
  token: string;
  stop(): Promise<void>;
}

async function oneServer(): Promise<Servers> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-load-'));
  const server = spawn(process.execPath, [CLI, '--data-dir', dataDir, 'serve'], { env: { ...process.env, PERENNIAL_PYTHON: PYTHON }, stdio: 'ignore' });
  while (!existsSync(join(dataDir, 'server.json'))) await new Promise((resolve) => setTimeout(resolve, 100));
  const { url, token } = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as { url: string; token: string };
  return {
    urls: [url],
    token,
    async stop() {
      server.kill('SIGTERM');
      await new Promise((resolve) => server.once('exit', resolve));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A cluster of `count` nodes on this box, with PostgreSQL and s3rver. */
async function cluster(count: number): Promise<Servers> {
  process.env.PERENNIAL_PYTHON = PYTHON;
  const postgres = await startPostgres();
  const bucket = await startBucket();
  Object.assign(process.env, bucket.env);
  const engines = { postgres, bucket, database: await postgres.database('load') };
  const nodes: TestNode[] = [];
  for (let i = 0; i < count; i++) nodes.push(await startNode(engines, { engine: 'sandbox' }));
  return {
    urls: nodes.map((node) => node.url),
    token: nodes[0]!.token,
    async stop() {
      for (const node of nodes) await node.cleanup();
      await bucket.stop();
      await postgres.stop();
    },
  };
}

/** What a run of agents at once measured: every call's time, the first ones apart, and what went wrong. */
export interface AgentsRun {
  all: number[];
  later: number[];
  first: number[];
  perSecond: number;
  failures: string[];
  /** Agents whose machine did not count every call that succeeded. */
  lost: number;
}

/** `agents` agents at once (`agent`) against one server or a cluster of `nodes`, every machine swapped out twice meanwhile. */
export async function agentsAtOnce(agents: number, nodes = 1): Promise<AgentsRun> {
  const servers = nodes > 1 ? await cluster(nodes) : await oneServer();
  const { urls, token } = servers;
  try {
    const api = new ForeverVMClient({ baseUrl: urls[0]!, token });
    const started = performance.now();
    let stop = false;
    // Another client swaps every machine out twice while the agents work.
    const swapper = (async () => {
      for (let round = 0; round < 2 && !stop; round++) {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        for (const machine of await api.listMachines()) await api.swap(machine.name).catch(() => {});
      }
    })();
    const outcomes = await Promise.all(Array.from({ length: agents }, (_, i) => agent(urls[i % urls.length]!, token, i % 2 ? 'python' : 'sandbox')));
    const seconds = (performance.now() - started) / 1000;
    stop = true;
    await swapper;
    const later = outcomes.flatMap((o) => o.times);
    const first = outcomes.flatMap((o) => o.first);
    const all = [...first, ...later];
    return {
      all,
      later,
      first,
      perSecond: all.length / seconds,
      failures: outcomes.flatMap((o) => o.failures),
      lost: outcomes.filter((o) => o.counted !== CALLS - o.failures.length).length,
    };
  } finally {
    await servers.stop();
  }
}

async function run(agents: number, nodes: number): Promise<void> {
  const { all, later, first, perSecond, failures, lost } = await agentsAtOnce(agents, nodes);
  row(
    `${agents} agents × ${CALLS} calls`,
    ms(median(all)),
    ms(percentile(all, 99)),
    ms(percentile(later, 99)),
    ms(median(first)),
    `${perSecond.toFixed(0)}/s`,
    `${failures.length} failed`,
    lost ? `${lost} lost` : 'none lost',
  );
  for (const failure of [...new Set(failures)].slice(0, 3)) console.log(`    failure: ${failure}`);
}

export async function benchLoad(): Promise<void> {
  const where = NODES > 1 ? `${NODES} cluster nodes (PostgreSQL, s3rver), each agent on one in turn` : 'one server';
  console.log(`\nagents at once over MCP HTTP (half sandbox, half python) on ${where}, every machine swapped out twice meanwhile`);
  // p99 later: without each machine's first call; first: the median first call after a machine is made.
  row('', 'p50', 'p99', 'p99 later', 'first p50', 'calls', 'failed', 'state');
  for (const agents of AGENTS) await run(agents, NODES);
}
