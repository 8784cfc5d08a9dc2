import { readFileSync } from 'node:fs';
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from './atomic-file.ts';

/** Where clients find the running local server of a data dir: pid, url and token, mode 0600. */
const SERVER_INFO_FILE = 'server.json';

const ServerInfoSchema = z.looseObject({
  pid: z.number().int().positive(),
  url: z.string(),
  token: z.string(),
  version: z.string(),
  startedAt: z.string(),
  /** Started by a client in the background, not by a person (absent in server.json of builds before 0.2.0). */
  background: z.boolean().optional(),
});

/** What `server.json` says about the running local server. */
export type ServerInfo = z.infer<typeof ServerInfoSchema>;

export function serverInfoPath(dataDir: string): string {
  return join(dataDir, SERVER_INFO_FILE);
}

/** The data dir's `server.json`, or null when there is none or it cannot be read. */
export async function readServerInfo(dataDir: string): Promise<ServerInfo | null> {
  try {
    const parsed = ServerInfoSchema.safeParse(JSON.parse(await readFile(serverInfoPath(dataDir), 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export function writeServerInfo(dataDir: string, info: ServerInfo): Promise<void> {
  return writeFileAtomic(serverInfoPath(dataDir), JSON.stringify(info, null, 1), 0o600);
}

/**
 * Whether a client started the server in the background (so a newer client may replace it). Builds
 * before 0.2.0 do not say: their background servers are known by the option clients start them
 * with, where the process's arguments can be read (Linux).
 */
export function startedInBackground(info: ServerInfo): boolean {
  if (info.background !== undefined) return info.background;
  try {
    return readFileSync(`/proc/${info.pid}/cmdline`, 'utf8').split('\0').includes('--exit-when-idle');
  } catch {
    return false;
  }
}

/** Removes `server.json` if it still describes process `pid` (a newer server may have replaced it). */
export async function removeServerInfo(dataDir: string, pid: number): Promise<void> {
  if ((await readServerInfo(dataDir))?.pid === pid) await unlink(serverInfoPath(dataDir)).catch(() => {});
}
