import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../platform/atomic-file.ts';

/**
 * The keys `perennial login --server URL` saved, one per server, in the data dir's
 * `server-keys.json` (0600, format 1): a person's key for a team's server, used where
 * PERENNIAL_TOKEN is not set.
 */
const FILE = 'server-keys.json';
const ServerKeys = z.looseObject({ format: z.literal(1), keys: z.record(z.string(), z.string()) });

/** A server's URL as keys are filed under it: no trailing slash, its origin and path as given. */
export function serverKeyName(url: string): string {
  return url.replace(/\/+$/, '');
}

function read(dataDir: string): z.infer<typeof ServerKeys> {
  try {
    return ServerKeys.parse(JSON.parse(readFileSync(join(dataDir, FILE), 'utf8')));
  } catch {
    // None saved yet, or a file this build cannot read: no key, as before a login.
    return { format: 1, keys: {} };
  }
}

export function savedServerKey(dataDir: string, url: string): string | undefined {
  return read(dataDir).keys[serverKeyName(url)];
}

export async function saveServerKey(dataDir: string, url: string, key: string): Promise<string> {
  const saved = read(dataDir);
  saved.keys[serverKeyName(url)] = key;
  const path = join(dataDir, FILE);
  await writeFileAtomic(path, JSON.stringify(saved, null, 2) + '\n', 0o600);
  return path;
}
