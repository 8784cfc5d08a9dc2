/**
 * A cluster on this box: two `perennial serve --cluster --store` nodes on a PostgreSQL server and
 * an S3-compatible bucket (s3rver), both started here. Prints what forwarding costs (a call on the
 * machine's own node, and the same call through the other node: over the WebSocket REPL, over
 * MCP), what a save costs with its commit to the bucket (against one computer's server), and the
 * takeovers: the first result on another node after the owner stopped (handed over at once) and
 * after a kill -9 (after the lease runs out, then the restore).
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { ClusterDirectory } from '../src/cluster/directory.ts';
import { HttpClient } from '../src/client/http-client.ts';
import { LocalServer } from '../src/server/local-server.ts';
import { startNode, type ClusterEngines } from '../test/helpers/cluster-nodes.ts';
import { startBucket, startPostgres } from '../test/helpers/cluster-services.ts';
import { TEST_PYTHON, tempDataDir } from '../test/helpers/machines.ts';
import { median, ms, percentile, row } from './stats.ts';

const LEASE_SECONDS = 3;
const CALLS = 200;
const TAKEOVERS = 3;

type Node = Awaited<ReturnType<typeof startNode>>;

async function timed(samples: number, call: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await call();
    times.push(performance.now() - start);
  }
  return times;
}

function report(label: string, times: number[]): void {
  row(label, ms(median(times)), ms(percentile(times, 99)));
}

async function mcpClient(node: Node): Promise<Client> {
  const client = new Client({ name: 'bench-cluster', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${node.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${node.token}` } } }));
  return client;
}

async function forwarding(a: Node, b: Node): Promise<void> {
  console.log(`\n  ${CALLS} calls of \`n += 1\` on a python machine node a runs:`);
  row('', 'p50', 'p99');
  const { name } = await a.client().create();
  const [direct, forwarded] = [a.client(), b.client()];
  await direct.run(name, 'n = 0');
  await forwarded.run(name, 'n += 1');
  report('WebSocket REPL, on node a', await timed(CALLS, () => direct.run(name, 'n += 1')));
  report('WebSocket REPL, through node b', await timed(CALLS, () => forwarded.run(name, 'n += 1')));
  const [onA, onB] = [await mcpClient(a), await mcpClient(b)];
  const call = (client: Client) => () => client.callTool({ name: 'run-python-in-repl', arguments: { replId: name, pythonCode: 'n += 1' } });
  await call(onB)();
  report('MCP run-python-in-repl, on node a', await timed(CALLS, call(onA)));
  report('MCP run-python-in-repl, through node b', await timed(CALLS, call(onB)));
  await Promise.all([onA.close(), onB.close()]);
}

/** A save with its commit, as `swap` does it (save, commit, stop), against one computer's server. */
async function commits(a: Node): Promise<void> {
  console.log('\n  A swap-out (the state saved, then, in a cluster, committed to the bucket and the directory):');
  row('', 'one computer', 'cluster node');
  const data = await tempDataDir();
  const single = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
  const alone = new HttpClient({ baseUrl: single.url, token: single.token });
  try {
    for (const [engine, code] of [
      ['python', 'x = 1'],
      ['python', 'x = list(range(10**6))'],
      ['sandbox', 'x = 1'],
      ['sandbox', 'x = list(range(10**6))'],
    ] as const) {
      const swaps = async (client: HttpClient) => {
        const { name } = await client.create({ engine });
        const times: number[] = [];
        for (let i = 0; i < 5; i++) {
          await client.run(name, `${code}\ny = ${i}`);
          const start = performance.now();
          await client.swap(name);
          times.push(performance.now() - start);
        }
        return median(times);
      };
      row(`${engine}, \`${code}\``, ms(await swaps(alone)), ms(await swaps(a.client())));
    }
  } finally {
    await alone.close();
    await single.close();
    await data.cleanup();
  }
}

async function takeovers(engines: ClusterEngines, directory: ClusterDirectory): Promise<void> {
  console.log(`\n  The first result on another node after the machine's node went away (lease ${LEASE_SECONDS} s; ${TAKEOVERS} runs, median):`);
  row('', 'first result', 'after lease');
  for (const engine of ['python', 'sandbox'] as const) {
    for (const how of ['stopped', 'kill -9'] as const) {
      const totals: number[] = [];
      const afterLease: number[] = [];
      for (let i = 0; i < TAKEOVERS; i++) {
        const [a, b] = await Promise.all([
          startNode(engines, { engine, leaseSeconds: LEASE_SECONDS }),
          startNode(engines, { engine, leaseSeconds: LEASE_SECONDS }),
        ]);
        try {
          const { name } = await a.client().create({ engine });
          await a.client().run(name, 'state = list(range(1000))');
          // Saved and committed: what the other node resumes from.
          await a.client().swap(name);
          const started = performance.now();
          let expired = Number.NaN;
          if (how === 'stopped') await a.stop();
          else {
            await a.kill();
            void (async () => {
              while ((await directory.nodes()).some((n) => n.url === a.url && n.live)) await new Promise((r) => setTimeout(r, 10));
              expired = performance.now();
            })();
          }
          await b.client().run(name, 'len(state)');
          const done = performance.now();
          totals.push(done - started);
          afterLease.push(how === 'stopped' ? done - started : done - expired);
        } finally {
          await Promise.all([a.cleanup(), b.cleanup()]);
        }
      }
      row(`${engine} machine, its node ${how}`, ms(median(totals)), ms(median(afterLease)));
    }
  }
}

export async function benchCluster(): Promise<void> {
  process.env.PERENNIAL_PYTHON = TEST_PYTHON;
  console.log('\nCluster: two nodes, PostgreSQL and s3rver on this box');
  const postgres = await startPostgres();
  const bucket = await startBucket();
  const engines: ClusterEngines = { postgres, bucket, database: await postgres.database('bench') };
  Object.assign(process.env, bucket.env);
  const directory = await ClusterDirectory.open(engines.database, LEASE_SECONDS);
  try {
    const [a, b] = await Promise.all([startNode(engines), startNode(engines)]);
    try {
      await forwarding(a, b);
      await commits(a);
    } finally {
      await Promise.all([a.cleanup(), b.cleanup()]);
    }
    await takeovers(engines, directory);
  } finally {
    await directory.close();
    await bucket.stop();
    await postgres.stop();
  }
}
