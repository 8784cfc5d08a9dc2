import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from './atomic-file.ts';
import { CodedError } from './coded-error.ts';

/**
 * That a data dir is a cluster node's cache (`node.json`), written when a node joins: its machines
 * live in the cluster, and a server of its own on the data dir would run stale copies of them
 * whose work the cluster never sees. Every command that would serve the data dir reads it: a
 * node started again takes the cluster's settings from it; anything else refuses.
 */
const NODE_CACHE_FILE = 'node.json';
const NODE_CACHE_VERSION = 1;

const NodeCacheRecord = z.looseObject({
  version: z.number().int(),
  /** The cluster's settings as the node had them, the database's password left out (it comes from PGPASSWORD or ~/.pgpass). */
  cluster: z.looseObject({
    database: z.string(),
    store: z.string(),
    storeEndpoint: z.string().optional(),
    storeRegion: z.string().optional(),
    leaseSeconds: z.number().optional(),
    advertiseUrl: z.string().optional(),
  }),
  /** Where the node listened, and where other nodes reached it. */
  host: z.string(),
  port: z.number().int(),
  url: z.string(),
});
export type NodeCache = z.infer<typeof NodeCacheRecord>;

/** A command would serve a node's cache as a server of its own. */
export class NodeCacheError extends CodedError {
  static override readonly errorCode = 'NodeCache';
  constructor(dataDir: string, node: NodeCache) {
    super(
      `The data dir ${dataDir} is the cache of a cluster node (${node.url}, cluster ${withoutPassword(node.cluster.database)} with ${node.cluster.store}): ` +
        `its machines live in the cluster, and a server of its own would run stale copies. Reach them through a node: perennial --server <a node's URL> ` +
        `with PERENNIAL_TOKEN=$(cat ${join(dataDir, 'server-token')}); or start this node again: perennial serve --data-dir ${dataDir}`,
    );
  }
}

/** The data dir's node record, or null when it is no node's. */
export async function readNodeCache(dataDir: string): Promise<NodeCache | null> {
  const path = join(dataDir, NODE_CACHE_FILE);
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  if (text === null) return null;
  let parsed;
  try {
    parsed = NodeCacheRecord.safeParse(JSON.parse(text));
  } catch {
    parsed = null;
  }
  // Unreadable, it still says the data dir is a node's: nothing may serve it as a server of its own.
  if (!parsed?.success)
    throw new Error(`${path} is damaged: the data dir is a cluster node's cache, whose cluster is unknown; start the node with its settings`);
  if (parsed.data.version > NODE_CACHE_VERSION)
    throw new Error(`${path} was written by a newer Perennial (format ${parsed.data.version}); update Perennial to serve this node's data dir`);
  return parsed.data;
}

/** Records that the data dir is a node's cache, for the cluster and the addresses given. */
export async function markNodeCache(dataDir: string, node: Pick<NodeCache, 'cluster' | 'host' | 'port' | 'url'>): Promise<void> {
  const record = { version: NODE_CACHE_VERSION, ...node, cluster: { ...node.cluster, database: withoutPassword(node.cluster.database) } };
  await writeFileAtomic(join(dataDir, NODE_CACHE_FILE), JSON.stringify(record, null, 1) + '\n');
}

/** A connection URL without its password (one that does not parse is not shown: it may hold one). */
export function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return 'the cluster database (its URL does not parse)';
  }
}
