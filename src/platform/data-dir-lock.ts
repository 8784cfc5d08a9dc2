import { readFileSync } from 'node:fs';
import { open, readFile, stat, unlink, utimes } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive } from './process-liveness.ts';
import { z } from 'zod';
import { writeFileAtomic } from './atomic-file.ts';
import { CodedError } from './coded-error.ts';
import { prepareDataDir } from './data-dir.ts';

const LOCK_FILE = 'owner.lock';
/** How often an owner touches its lock file. */
const HEARTBEAT_MS = 30_000;
/**
 * A lock whose owner's pid runs but has not touched it for this long belongs to a process that
 * died and whose pid was given to another, where the system does not say when a process started
 * (macOS, Windows). Long enough that no owner, however busy, lets that much time pass.
 */
const SILENT_OWNER_MS = 10 * 60_000;

/** Who owns a data dir, as its lock file says. */
export const LockRecord = z.object({
  pid: z.number().int().positive(),
  /** The process's start time as the kernel reports it, so a reused pid is not taken for the owner. */
  startTime: z.string().nullable(),
  hostname: z.string(),
  acquiredAt: z.string(),
  /** The owner touches the lock every `HEARTBEAT_MS` (absent in locks of builds before 0.2.1). */
  heartbeat: z.literal(true).optional(),
});
export type LockRecord = z.infer<typeof LockRecord>;

/** Another live process owns the data dir. */
export class DataDirLockedError extends CodedError {
  static override readonly errorCode = 'DataDirLocked';
  constructor(
    readonly dataDir: string,
    readonly ownerPid: number,
  ) {
    super(`The data dir ${dataDir} is in use by process ${ownerPid}`);
  }
}

/**
 * Exclusive ownership of a data dir. Exactly one process may own it; a lock left behind by a
 * process that has died (kill -9, crash, reboot) is taken over.
 */
export class DataDirLock {
  readonly #heartbeat: NodeJS.Timeout;

  private constructor(
    readonly path: string,
    readonly record: LockRecord,
  ) {
    this.#heartbeat = setInterval(() => {
      const now = new Date();
      utimes(path, now, now).catch(() => {});
    }, HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  /** This process as a lock's owner, from now. */
  static ownRecord(): LockRecord {
    return { pid: process.pid, startTime: processStartTime(process.pid), hostname: hostname(), acquiredAt: new Date().toISOString(), heartbeat: true };
  }

  static async acquire(dataDir: string): Promise<DataDirLock> {
    await prepareDataDir(dataDir);
    const path = join(dataDir, LOCK_FILE);
    const record = DataDirLock.ownRecord();
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const handle = await open(path, 'wx', 0o600);
        await handle.writeFile(JSON.stringify(record));
        await handle.sync();
        await handle.close();
        return new DataDirLock(path, record);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const seen = await readFile(path, 'utf8').catch(() => null);
      const owner = parseRecord(seen);
      if (owner && (await isAlive(owner, path))) throw new DataDirLockedError(dataDir, owner.pid);
      if (!owner && seen !== null && (await isFresh(path))) {
        // Another process has just created it and is still writing its record.
        await delay(100);
        continue;
      }
      // The owner is gone. Remove its lock only if it is still the one judged stale: a process
      // that raced us to the takeover may have written its own meanwhile.
      const again = await readFile(path, 'utf8').catch(() => null);
      if (again !== null && again === seen) await unlink(path).catch(() => {});
    }
    throw new Error(`Could not take the lock ${path}; another process keeps taking it`);
  }

  /** The pid of the live owner of `dataDir`, if any. */
  static async owner(dataDir: string): Promise<number | null> {
    const path = join(dataDir, LOCK_FILE);
    const owner = await readOwner(path);
    return owner && (await isAlive(owner, path)) ? owner.pid : null;
  }

  /**
   * The lock another owner handed to `record` (see `handOver`), or null when it did not: an owner
   * of a build before 0.2.2 released it instead.
   */
  static async adopt(dataDir: string, record: LockRecord): Promise<DataDirLock | null> {
    const path = join(dataDir, LOCK_FILE);
    return isSameOwner(await readOwner(path), record) ? new DataDirLock(path, record) : null;
  }

  async release(): Promise<void> {
    clearInterval(this.#heartbeat);
    if (isSameOwner(await readOwner(this.path), this.record)) await unlink(this.path).catch(() => {});
  }

  /**
   * Gives the data dir to `successor` in one step (the lock file is replaced, never removed), so
   * that no other process can take it between this owner and the next.
   */
  async handOver(successor: LockRecord): Promise<void> {
    clearInterval(this.#heartbeat);
    if (isSameOwner(await readOwner(this.path), this.record)) await writeFileAtomic(this.path, JSON.stringify(successor));
  }
}

function isSameOwner(a: LockRecord | null, b: LockRecord): boolean {
  return a?.pid === b.pid && a.acquiredAt === b.acquiredAt;
}

async function readOwner(path: string): Promise<LockRecord | null> {
  return parseRecord(await readFile(path, 'utf8').catch(() => null));
}

function parseRecord(text: string | null): LockRecord | null {
  try {
    const parsed = JSON.parse(text ?? '') as Partial<LockRecord>;
    return typeof parsed.pid === 'number' ? (parsed as LockRecord) : null;
  } catch {
    return null; // missing, or half-written by an owner that died while writing it
  }
}

async function isFresh(path: string): Promise<boolean> {
  const info = await stat(path).catch(() => null);
  return info !== null && Date.now() - info.mtimeMs < 2000;
}

async function isAlive(owner: LockRecord, path: string): Promise<boolean> {
  if (owner.hostname !== hostname()) return true; // cannot judge a process on another host
  if (!isProcessAlive(owner.pid)) return false;
  const startTime = processStartTime(owner.pid);
  if (owner.startTime && startTime) return owner.startTime === startTime;
  if (!owner.heartbeat) return true;
  const touched = await stat(path).catch(() => null);
  return touched !== null && Date.now() - touched.mtimeMs < SILENT_OWNER_MS;
}

/** Field 22 of /proc/<pid>/stat (Linux); null elsewhere. */
function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}
