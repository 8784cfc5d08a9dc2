import { createReadStream } from 'node:fs';
import { appendFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { AuditEntry, AuditFilter } from '../shared/team-requests.ts';

/**
 * Who did what to which machine, from where, and how it ended: a team's audit log. It names
 * machines, people and keys, never code, output or a key's secret. One computer's server appends
 * it to `audit.jsonl` in its data dir (JSON lines, a first line `{"t":"format","version":1}`).
 */
export interface AuditLog {
  append(entry: AuditEntry): Promise<void>;
  /** The entries `filter` asks for, oldest first. */
  read(filter: AuditFilter): Promise<AuditEntry[]>;
}

const FORMAT_LINE = JSON.stringify({ t: 'format', version: 1 });
export const AUDIT_FILE = 'audit.jsonl';

/** The audit log of one computer's server: appended line by line, read back whatever a crash cut. */
export class FileAuditLog implements AuditLog {
  readonly #path: string;
  /** Appends one after another, so that lines never interleave and the format line comes first. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(dataDir: string) {
    this.#path = join(dataDir, AUDIT_FILE);
  }

  append(entry: AuditEntry): Promise<void> {
    const next = this.#queue.then(async () => {
      const fresh = !(await stat(this.#path).catch(() => null));
      await appendFile(this.#path, (fresh ? FORMAT_LINE + '\n' : '') + JSON.stringify(entry) + '\n', { mode: 0o600 });
    });
    this.#queue = next.catch(() => {});
    return next;
  }

  async read(filter: AuditFilter): Promise<AuditEntry[]> {
    await this.#queue;
    const limit = filter.limit ?? 1000;
    const kept: AuditEntry[] = [];
    if (!(await stat(this.#path).catch(() => null))) return kept;
    const lines = createInterface({ input: createReadStream(this.#path, 'utf8'), crlfDelay: Infinity });
    for await (const line of lines) {
      const entry = parseEntry(line);
      if (!entry || !matches(entry, filter)) continue;
      kept.push(entry);
      if (kept.length > limit) kept.shift();
    }
    return kept;
  }
}

function parseEntry(line: string): AuditEntry | undefined {
  try {
    const value = JSON.parse(line) as Partial<AuditEntry> & { t?: string };
    // The format line, and a line a crash cut short, are not entries.
    return value.t === undefined && typeof value.at === 'string' && typeof value.action === 'string' ? (value as AuditEntry) : undefined;
  } catch {
    return undefined;
  }
}

function matches(entry: AuditEntry, filter: AuditFilter): boolean {
  return (
    (filter.person === undefined || entry.who === filter.person) &&
    (filter.machine === undefined || entry.machine === filter.machine) &&
    (filter.action === undefined || entry.action === filter.action) &&
    (filter.since === undefined || entry.at >= new Date(filter.since).toISOString())
  );
}
