import { writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import pg from 'pg';
import { clusterSettings, readSettingsFile, SETTINGS_FILE, type ClusterSettings } from '../../src/cluster/cluster-settings.ts';

/**
 * The suites that run again against a cluster's node (`test/cluster-suites.ts`) find its engines
 * here: PERENNIAL_TEST_CLUSTER holds the PostgreSQL server's URL, the bucket's and its endpoint.
 */
interface TestCluster {
  postgres: string;
  store: string;
  endpoint: string;
}

export const TEST_CLUSTER_VARIABLE = 'PERENNIAL_TEST_CLUSTER';

function testCluster(): TestCluster | undefined {
  const given = process.env[TEST_CLUSTER_VARIABLE];
  return given ? (JSON.parse(given) as TestCluster) : undefined;
}

/**
 * Under PERENNIAL_TEST_CLUSTER, makes the data dir a cluster node's: a database and a prefix of
 * the bucket of its own (so that each test's machines are its own, as on one computer), named in
 * its settings file, which `perennial serve` reads. Otherwise nothing.
 */
export async function joinTestCluster(dir: string): Promise<void> {
  const cluster = testCluster();
  if (!cluster) return;
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '_');
  const admin = new pg.Client(cluster.postgres);
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const database = new URL(cluster.postgres);
  database.pathname = `/${name}`;
  const settings = { database: database.toString(), store: `${cluster.store}/${name}`, storeEndpoint: cluster.endpoint, leaseSeconds: 5 };
  await writeFile(join(dir, SETTINGS_FILE), JSON.stringify({ version: 1, cluster: settings }));
}

/** The cluster settings of a data dir `joinTestCluster` made, for a server a test starts in its own process. */
export async function testClusterOf(dir: string): Promise<{ cluster?: ClusterSettings }> {
  const cluster = clusterSettings(await readSettingsFile(join(dir, SETTINGS_FILE)));
  return cluster ? { cluster } : {};
}
