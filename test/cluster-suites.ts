/**
 * The ForeverVM API, MCP conformance and CLI suites again, each server they start a cluster's
 * node: a PostgreSQL server and an S3-compatible bucket (s3rver) are started here, and every data
 * dir the suites make names a database and a prefix of its own in its settings file
 * (`test/helpers/test-cluster.ts`). `npm test` runs it after the suites' first pass.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import pg from 'pg';
import { startBucket, startPostgres } from './helpers/cluster-services.ts';
import { TEST_CLUSTER_VARIABLE } from './helpers/test-cluster.ts';

const SUITES = ['test/integration/server-api.test.ts', 'test/integration/mcp-conformance.test.ts', 'test/integration/cli.test.ts'];

const postgres = await startPostgres();
const bucket = await startBucket();
let code: number | null;
try {
  const env = {
    ...process.env,
    ...bucket.env,
    [TEST_CLUSTER_VARIABLE]: JSON.stringify({ postgres: postgres.url, store: bucket.url, endpoint: bucket.endpoint }),
  };
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...SUITES], { env, stdio: 'inherit' });
  [code] = (await once(child, 'exit')) as [number | null];
  // The suites ran against nodes only if nodes recorded machines: a pass on servers of their own proves nothing here.
  const counted = await machinesRecorded(postgres.url);
  console.log(`The suites' nodes recorded ${counted.machines} machines in ${counted.databases} cluster databases.`);
  if (counted.machines === 0) code = 1;
} finally {
  await bucket.stop();
  await postgres.stop();
}
process.exit(code ?? 1);

async function machinesRecorded(url: string): Promise<{ databases: number; machines: number }> {
  const admin = new pg.Client(url);
  await admin.connect();
  const names = (await admin.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'perennial_test_%'")).rows.map((r) => r.datname);
  await admin.end();
  let machines = 0;
  for (const name of names) {
    const database = new URL(url);
    database.pathname = `/${name}`;
    const client = new pg.Client(database.toString());
    await client.connect();
    machines += Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM perennial_machines').catch(() => ({ rows: [{ n: '0' }] }))).rows[0]!.n);
    await client.end();
  }
  return { databases: names.length, machines };
}
