import type { AuditEntry, AuditFilter } from '../shared/team-requests.ts';
import type { AuditLog } from '../team/audit-log.ts';
import { readTeamDocument, type TeamStore } from '../team/team-store.ts';
import type { TeamDocument } from '../team/team-document.ts';
import type { ClusterDirectory } from './directory.ts';

/**
 * How long a node answers from the team's document as it last read it. Every node reads it again
 * after this, so a key revoked on one node is refused on all of them within about a second.
 */
const FRESH_MS = 1000;
/** How long a node goes on answering from the document it has while the database cannot be reached; after that it refuses. */
const STALE_LIMIT_MS = 30_000;

/** Made within the directory's format 1: builds before teams read none of these tables. */
async function makeTables(directory: ClusterDirectory): Promise<void> {
  await directory.transaction(async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('perennial-schema'))`);
    await client.query(`
      CREATE TABLE IF NOT EXISTS perennial_team (
        id integer PRIMARY KEY CHECK (id = 1),
        version bigint NOT NULL,
        document jsonb NOT NULL
      );
      CREATE TABLE IF NOT EXISTS perennial_audit (
        id bigserial PRIMARY KEY,
        at timestamptz NOT NULL,
        who text NOT NULL,
        machine text,
        action text NOT NULL,
        entry jsonb NOT NULL
      );
      CREATE INDEX IF NOT EXISTS perennial_audit_at ON perennial_audit (at);
    `);
  });
}

/** A cluster's team: one row every node reads (again each second) and changes in a transaction, so that all nodes serve the same team. */
export class ClusterTeamStore implements TeamStore {
  #document: TeamDocument | undefined;
  #version = -1;
  #readAt = -Infinity;
  #reading: Promise<TeamDocument | undefined> | undefined;

  private constructor(private readonly directory: ClusterDirectory) {}

  static async open(directory: ClusterDirectory): Promise<ClusterTeamStore> {
    await makeTables(directory);
    return new ClusterTeamStore(directory);
  }

  read(fresh = false): Promise<TeamDocument | undefined> {
    if (!fresh && performance.now() - this.#readAt < FRESH_MS) return Promise.resolve(this.#document);
    // Reads asked for at once share one query: refusals that come in a burst cost the database one.
    this.#reading ??= this.#refresh().finally(() => (this.#reading = undefined));
    return this.#reading;
  }

  async #refresh(): Promise<TeamDocument | undefined> {
    try {
      const { rows } = await this.directory.query<{ version: string; document: unknown }>('SELECT version, document FROM perennial_team WHERE id = 1');
      this.#take(rows[0]);
    } catch (error) {
      // A moment without the database costs no request; a long one stops serving a team that may have changed since.
      if (performance.now() - this.#readAt > STALE_LIMIT_MS) throw error;
    }
    return this.#document;
  }

  #take(row: { version: string; document: unknown } | undefined): void {
    const version = row ? Number(row.version) : -1;
    if (version !== this.#version) {
      this.#document = row && readTeamDocument(row.document, `The team's document in ${this.directory.description}`);
      this.#version = version;
    }
    this.#readAt = performance.now();
  }

  async change<T>(change: (document: TeamDocument | undefined) => { document: TeamDocument; answer: T }): Promise<T> {
    const { answer, row } = await this.directory.transaction(async (client) => {
      const { rows } = await client.query<{ version: string; document: unknown }>('SELECT version, document FROM perennial_team WHERE id = 1 FOR UPDATE');
      const current = rows[0] && readTeamDocument(rows[0].document, `The team's document in ${this.directory.description}`);
      const { document, answer } = change(current);
      const version = rows[0] ? Number(rows[0].version) + 1 : 1;
      await client.query(
        `INSERT INTO perennial_team (id, version, document) VALUES (1, $1, $2) ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, document = EXCLUDED.document`,
        [version, JSON.stringify(document)],
      );
      return { answer, row: { version: String(version), document } };
    });
    this.#take(row);
    return answer;
  }
}

/** A cluster's audit log: every node appends to one table, so an admin reads the whole cluster's from any node. */
export class ClusterAuditLog implements AuditLog {
  /** Entries not yet written, and the write under way: a burst of requests is one statement. */
  #pending: AuditEntry[] = [];
  #flushing: Promise<void> | undefined;

  constructor(private readonly directory: ClusterDirectory) {}

  append(entry: AuditEntry): Promise<void> {
    this.#pending.push(entry);
    return this.#flush();
  }

  #flush(): Promise<void> {
    this.#flushing ??= (async () => {
      // Entries that come while one batch is written go in the next.
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        await this.directory.query(
          `INSERT INTO perennial_audit (at, who, machine, action, entry)
           SELECT (e->>'at')::timestamptz, e->>'who', e->>'machine', e->>'action', e FROM jsonb_array_elements($1::jsonb) AS e`,
          [JSON.stringify(batch)],
        );
      }
    })().finally(() => (this.#flushing = undefined));
    return this.#flushing;
  }

  async read(filter: AuditFilter): Promise<AuditEntry[]> {
    await this.#flushing?.catch(() => {});
    const where: string[] = [];
    const values: unknown[] = [];
    const when = (clause: string, value: unknown) => {
      values.push(value);
      where.push(clause.replace('?', `$${values.length}`));
    };
    if (filter.person !== undefined) when('who = ?', filter.person);
    if (filter.machine !== undefined) when('machine = ?', filter.machine);
    if (filter.action !== undefined) when('action = ?', filter.action);
    if (filter.since !== undefined) when('at >= ?', new Date(filter.since).toISOString());
    values.push(filter.limit ?? 1000);
    const { rows } = await this.directory.query<{ entry: AuditEntry }>(
      `SELECT entry FROM (SELECT id, entry FROM perennial_audit ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT $${values.length}) AS last ORDER BY id`,
      values,
    );
    return rows.map((row) => row.entry);
  }
}
