import pg from 'pg';
import { z } from 'zod';
import { CodedError } from '../platform/coded-error.ts';
import { withoutPassword } from '../platform/node-cache.ts';
import { MachineMovedError } from '../machines/machine-errors.ts';

/** PostgreSQL could not be reached or refused a request: nothing was changed by it. */
export class ClusterUnavailableError extends CodedError {
  static override readonly errorCode = 'ClusterUnavailable';
}

/**
 * The tables' format. A version goes up only for a change older builds would misread; a newer
 * one is refused before anything is written, as every format of Perennial's.
 */
const SCHEMA_VERSION = 1;

/** What the bucket holds for a machine, as its last commit recorded it. */
export const Commit = z.looseObject({
  /** The machine's folder (StoredFolders), and where its objects are in the bucket. */
  tree: z.string(),
  home: z.string(),
  /** The instruction the committed state holds the effects of, and every one before it. */
  seq: z.number().int(),
  at: z.string(),
  bytes: z.number().nonnegative(),
  /** The node that committed it. */
  node: z.string(),
});
export type Commit = z.infer<typeof Commit>;

/** A machine's row: who owns it and what the bucket holds of it. */
export interface MachineRow {
  name: string;
  /** The node that owns it; null when its last owner let it go. */
  owner: string | null;
  /** That node's URL, and whether its lease runs. */
  ownerUrl: string | null;
  ownerLive: boolean;
  /** How long its owner's lease runs on unrenewed, in milliseconds. */
  ownerLeaseLeftMs: number;
  /** Goes up at each takeover: a save is committed only under the generation it was made in. */
  generation: number;
  /** Every instruction number below it was given out. */
  nextSeq: number;
  commit: Commit | null;
  /** The machine's manifest as last committed (for listing it where it is not loaded). */
  manifest: unknown;
  deleted: boolean;
}

/** A node, as the directory knows it. */
export interface NodeRecord {
  id: string;
  url: string;
  version: string;
}

/** How much more a node can keep warm, as it says at each renewal (`MachineManager.room`). */
const NodeRoom = z.object({ bytes: z.number(), warm: z.number(), maxWarm: z.number().optional(), computer: z.string().optional() });
export type NodeRoom = z.infer<typeof NodeRoom>;

/** A node whose lease runs, as placement weighs it. */
export interface LiveNode {
  id: string;
  url: string;
  draining: boolean;
  room: NodeRoom | null;
}

/** The channel nodes announce their machines' changes on. */
const ANNOUNCEMENTS = 'perennial_events';

const MACHINE_COLUMNS = `m.name, m.owner, n.url AS owner_url, COALESCE(n.expires_at > clock_timestamp(), false) AS owner_live,
  GREATEST(0, EXTRACT(EPOCH FROM (n.expires_at - clock_timestamp())) * 1000) AS owner_lease_left_ms,
  m.generation, m.next_seq, m.commit, m.manifest, m.deleted_at IS NOT NULL AS deleted`;

/**
 * The cluster's directory, in PostgreSQL: the nodes and their leases, and one row per machine
 * naming the node that owns it. A node keeps its lease by renewing it; a machine whose owner's
 * lease ran out may be taken by any node, which raises its generation. Every write a node makes
 * for a machine is conditional on the generation it took it in, so that a node that was paused
 * or cut off past its lease can neither commit over its successor's state nor give out an
 * instruction number its successor gives. Times are the database's, so nodes' clocks need not agree.
 */
export class ClusterDirectory {
  readonly #pool: pg.Pool;
  /** The database, for messages (no password). */
  readonly description: string;

  private constructor(
    private readonly url: string,
    private readonly leaseSeconds: number,
  ) {
    this.description = withoutPassword(url);
    this.#pool = new pg.Pool({ connectionString: url, max: 6, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000 });
    // An idle connection the server closed (a restart) must not take the node down with it.
    this.#pool.on('error', () => {});
  }

  /** Connects and makes (or checks) the tables. */
  static async open(url: string, leaseSeconds: number): Promise<ClusterDirectory> {
    const directory = new ClusterDirectory(url, leaseSeconds);
    try {
      await directory.#migrate();
      return directory;
    } catch (error) {
      await directory.close();
      throw error;
    }
  }

  async #migrate(): Promise<void> {
    await this.transaction(async (client) => {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('perennial-schema'))`);
      await client.query('CREATE TABLE IF NOT EXISTS perennial_schema (version integer NOT NULL)');
      const found = (await client.query<{ version: number }>('SELECT version FROM perennial_schema')).rows[0]?.version;
      if (found !== undefined && found > SCHEMA_VERSION)
        throw new ClusterUnavailableError(
          `The cluster's tables in ${this.description} were made by a newer Perennial (format ${found}; this one reads ${SCHEMA_VERSION}): update Perennial on this node`,
        );
      if (found === undefined) await this.#create(client);
      // Added within format 1: the builds before it name the columns they write, and read none of these.
      const { rowCount } = await client.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'perennial_nodes' AND column_name = 'room'`);
      if (!rowCount) await client.query('ALTER TABLE perennial_nodes ADD COLUMN room jsonb, ADD COLUMN draining boolean NOT NULL DEFAULT false');
    });
  }

  async #create(client: pg.PoolClient): Promise<void> {
    await client.query(`
        CREATE TABLE perennial_nodes (
          id text PRIMARY KEY,
          url text NOT NULL,
          version text NOT NULL,
          started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
          expires_at timestamptz NOT NULL
        );
        CREATE TABLE perennial_machines (
          name text PRIMARY KEY,
          owner text,
          generation bigint NOT NULL DEFAULT 1,
          next_seq bigint NOT NULL DEFAULT 0,
          commit jsonb,
          manifest jsonb NOT NULL,
          created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
          deleted_at timestamptz
        );
        CREATE INDEX perennial_machines_owner ON perennial_machines (owner);
        CREATE TABLE perennial_settings (key text PRIMARY KEY, value text NOT NULL);
        INSERT INTO perennial_schema (version) VALUES (${SCHEMA_VERSION});
      `);
  }

  /** The cluster's shared value `key`: `proposed` if none was set yet. */
  async setting(key: string, proposed: string): Promise<string> {
    const { rows } = await this.query<{ value: string }>(
      `INSERT INTO perennial_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET key = EXCLUDED.key RETURNING value`,
      [key, proposed],
    );
    return rows[0]!.value;
  }

  /** Enters `node` with a lease (and its room); a node that had its URL before is gone (one process serves a URL). */
  async join(node: NodeRecord, room?: NodeRoom): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('DELETE FROM perennial_nodes WHERE url = $1 AND id <> $2', [node.url, node.id]);
      await client.query(
        `INSERT INTO perennial_nodes (id, url, version, expires_at, room) VALUES ($1, $2, $3, clock_timestamp() + make_interval(secs => $4), $5)`,
        [node.id, node.url, node.version, this.leaseSeconds, room ? JSON.stringify(room) : null],
      );
    });
  }

  /** Renews `id`'s lease, with its room now; answers false when the node is no longer entered (another took its URL). */
  async renew(id: string, room?: NodeRoom): Promise<boolean> {
    const { rowCount } = await this.query(
      `UPDATE perennial_nodes SET expires_at = clock_timestamp() + make_interval(secs => $2), room = COALESCE($3, room) WHERE id = $1`,
      [id, this.leaseSeconds, room ? JSON.stringify(room) : null],
    );
    return rowCount === 1;
  }

  /** Marks `id` as draining: no machine is placed on it any more. */
  async drain(id: string): Promise<void> {
    await this.query('UPDATE perennial_nodes SET draining = true WHERE id = $1', [id]);
  }

  /** The live nodes with their room, as each last renewed it (none: a node of a build that does not say). */
  async live(): Promise<LiveNode[]> {
    const { rows } = await this.query<{ id: string; url: string; room: unknown; draining: boolean }>(
      'SELECT id, url, room, draining FROM perennial_nodes WHERE expires_at > clock_timestamp() ORDER BY started_at',
    );
    return rows.map((row) => {
      const room = NodeRoom.safeParse(row.room);
      return { id: row.id, url: row.url, draining: row.draining, room: room.success ? room.data : null };
    });
  }

  /** Lets go of the machine, its state committed whole, as its owner in `generation`: the next node asked takes it at once. */
  async release(name: string, node: string, generation: number): Promise<void> {
    const { rowCount } = await this.query('UPDATE perennial_machines SET owner = NULL WHERE name = $1 AND owner = $2 AND generation = $3', [
      name,
      node,
      generation,
    ]);
    if (rowCount !== 1) throw await this.#moved(name);
  }

  /** Lets go of `id`'s machines (their state committed) and leaves: other nodes take them at once. */
  async leave(id: string, release: string[]): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('UPDATE perennial_machines SET owner = NULL WHERE owner = $1 AND name = ANY($2)', [id, release]);
      await client.query('DELETE FROM perennial_nodes WHERE id = $1', [id]);
    });
  }

  /** Every node entered, the earliest first, with how many machines each owns; and how many machines the cluster has. */
  async census(): Promise<{ nodes: Array<{ url: string; version: string; live: boolean; machines: number }>; machines: number }> {
    const { rows } = await this.query<{ url: string; version: string; live: boolean; machines: string }>(
      `SELECT n.url, n.version, n.expires_at > clock_timestamp() AS live, count(m.name) AS machines
       FROM perennial_nodes n LEFT JOIN perennial_machines m ON m.owner = n.id AND m.deleted_at IS NULL
       GROUP BY n.id ORDER BY n.started_at`,
    );
    const { rows: total } = await this.query<{ machines: string }>('SELECT count(*) AS machines FROM perennial_machines WHERE deleted_at IS NULL');
    return { nodes: rows.map((row) => ({ ...row, machines: Number(row.machines) })), machines: Number(total[0]!.machines) };
  }

  async nodes(): Promise<Array<NodeRecord & { live: boolean }>> {
    const { rows } = await this.query<{ id: string; url: string; version: string; live: boolean }>(
      'SELECT id, url, version, expires_at > clock_timestamp() AS live FROM perennial_nodes ORDER BY started_at',
    );
    return rows;
  }

  async locate(name: string): Promise<MachineRow | undefined> {
    const { rows } = await this.query(`SELECT ${MACHINE_COLUMNS} FROM perennial_machines m LEFT JOIN perennial_nodes n ON n.id = m.owner WHERE m.name = $1`, [
      name,
    ]);
    return rows[0] && machineRow(rows[0]);
  }

  /** Every machine not deleted. */
  async machines(): Promise<MachineRow[]> {
    const { rows } = await this.query(
      `SELECT ${MACHINE_COLUMNS} FROM perennial_machines m LEFT JOIN perennial_nodes n ON n.id = m.owner WHERE m.deleted_at IS NULL`,
    );
    return rows.map(machineRow);
  }

  /** Of `names`, those any machine has or had, with when that machine was made. */
  async madeAt(names: string[]): Promise<Map<string, string | null>> {
    const { rows } = await this.query<{ name: string; made: string | null }>(
      `SELECT name, manifest->>'createdAt' AS made FROM perennial_machines WHERE name = ANY($1)`,
      [names],
    );
    return new Map(rows.map((row) => [row.name, row.made]));
  }

  /** Whether any machine has or had `name` (a deleted machine's name is never given again). */
  async isUsed(name: string): Promise<boolean> {
    return ((await this.query('SELECT 1 FROM perennial_machines WHERE name = $1', [name])).rowCount ?? 0) > 0;
  }

  /** A new machine owned by `node`; false when the name is, or was, another's. */
  async claim(name: string, node: string, manifest: unknown): Promise<boolean> {
    const { rowCount } = await this.query('INSERT INTO perennial_machines (name, owner, manifest) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING', [
      name,
      node,
      JSON.stringify(manifest),
    ]);
    return rowCount === 1;
  }

  /**
   * Makes `node` the machine's owner, raising its generation, when its owner let it go or its
   * owner's lease ran out (or it is `node` itself, started again). Answers the row as it was
   * before, with the generation `node` now holds; undefined when a live node owns it (or it is gone).
   */
  async take(name: string, node: string): Promise<{ before: MachineRow; generation: number } | undefined> {
    return this.transaction(async (client) => {
      // The row locked first, then read with its owner's lease in a statement of its own: a
      // locking read that waited for another node's take would join the owner it had before the
      // wait to the row as it is after, see no live owner, and take a machine a live node just took.
      await client.query('SELECT 1 FROM perennial_machines WHERE name = $1 FOR UPDATE', [name]);
      const { rows } = await client.query(
        `SELECT ${MACHINE_COLUMNS} FROM perennial_machines m LEFT JOIN perennial_nodes n ON n.id = m.owner WHERE m.name = $1`,
        [name],
      );
      const before = rows[0] && machineRow(rows[0]);
      if (!before || before.deleted || (before.owner !== null && before.owner !== node && before.ownerLive)) return undefined;
      const { rows: taken } = await client.query<{ generation: string }>(
        'UPDATE perennial_machines SET owner = $2, generation = generation + 1 WHERE name = $1 RETURNING generation',
        [name, node],
      );
      return { before, generation: Number(taken[0]!.generation) };
    });
  }

  /**
   * Gives out the machine's next instruction number, as the owner in `generation`: a node that
   * lost the machine is refused before its caller learns a number its successor may give.
   */
  async reserve(name: string, node: string, generation: number): Promise<void> {
    const { rowCount } = await this.query(
      'UPDATE perennial_machines SET next_seq = next_seq + 1 WHERE name = $1 AND owner = $2 AND generation = $3 AND deleted_at IS NULL',
      [name, node, generation],
    );
    if (rowCount !== 1) throw await this.#moved(name);
  }

  /** Records a commit of the machine's state, as the owner in `generation`, or refuses it. */
  async commit(name: string, node: string, generation: number, commit: Commit, manifest: unknown): Promise<void> {
    const { rowCount } = await this.query(
      `UPDATE perennial_machines SET commit = $4, manifest = $5, next_seq = GREATEST(next_seq, $6)
       WHERE name = $1 AND owner = $2 AND generation = $3 AND deleted_at IS NULL`,
      [name, node, generation, JSON.stringify(commit), JSON.stringify(manifest), commit.seq + 1],
    );
    if (rowCount !== 1) throw await this.#moved(name);
  }

  /** Marks the machine deleted, as its owner; its name stays taken. */
  async retire(name: string, node: string, generation: number): Promise<void> {
    const { rowCount } = await this.query(
      'UPDATE perennial_machines SET deleted_at = clock_timestamp(), owner = NULL, commit = NULL WHERE name = $1 AND owner = $2 AND generation = $3',
      [name, node, generation],
    );
    if (rowCount !== 1) throw await this.#moved(name);
  }

  /**
   * Runs `task` holding the cluster-wide lock `key` (a session advisory lock: it ends with the
   * connection, so a node that dies holding it lets it go).
   */
  async withLock<T>(key: string, task: () => Promise<T>): Promise<T> {
    const client = await this.#connect();
    try {
      await this.#on(client, 'SELECT pg_advisory_lock(hashtext($1))', [key]);
      try {
        return await task();
      } finally {
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => {});
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => {});
  }

  /** Tells every node that hears (`hear`) of `payload`: PostgreSQL's NOTIFY, at most 8000 bytes, delivered once sent. */
  async announce(payload: string): Promise<void> {
    await this.query('SELECT pg_notify($1, $2)', [ANNOUNCEMENTS, payload]);
  }

  /**
   * Hears what nodes announce, this one's included, on a connection of its own, made again a
   * second after it drops (what is announced meanwhile is not heard). Answers how to stop.
   */
  hear(onPayload: (payload: string) => void): () => Promise<void> {
    let listening: pg.Client | undefined;
    let retry: NodeJS.Timeout | undefined;
    let stopped = false;
    const again = () => {
      listening = undefined;
      if (stopped || retry) return;
      retry = setTimeout(() => {
        retry = undefined;
        void connect();
      }, 1000);
      retry.unref();
    };
    const connect = async () => {
      const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000 });
      client.on('notification', (message) => message.channel === ANNOUNCEMENTS && message.payload && onPayload(message.payload));
      client.on('error', again);
      client.on('end', again);
      try {
        await client.connect();
        await client.query(`LISTEN ${ANNOUNCEMENTS}`);
        listening = client;
        if (stopped) await client.end();
      } catch {
        await client.end().catch(() => {});
        again();
      }
    };
    void connect();
    return async () => {
      stopped = true;
      clearTimeout(retry);
      await listening?.end().catch(() => {});
    };
  }

  /** Why `node` may no longer write for the machine, as an error. */
  async #moved(name: string): Promise<MachineMovedError> {
    const row = await this.locate(name).catch(() => undefined);
    if (!row || row.deleted) return new MachineMovedError(`Machine ${name} was deleted on another node`);
    const now = row.owner === null ? 'no node owns it now' : `node ${row.ownerUrl ?? row.owner} owns it now (generation ${row.generation})`;
    return new MachineMovedError(`This node no longer owns machine ${name}: its lease ran out while it was unreachable, and ${now}`);
  }

  /** One statement, its failure a ClusterUnavailableError; for the cluster's other tables too (the team's). */
  async query<R extends pg.QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.#pool.query<R>(text, values);
    } catch (error) {
      throw this.#unavailable(error);
    }
  }

  async #on<R extends pg.QueryResultRow>(client: pg.PoolClient, text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await client.query<R>(text, values);
    } catch (error) {
      throw this.#unavailable(error);
    }
  }

  async #connect(): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (error) {
      throw this.#unavailable(error);
    }
  }

  /** `task` in one transaction, rolled back when it throws. */
  async transaction<T>(task: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#connect();
    try {
      await this.#on(client, 'BEGIN');
      const result = await task(client);
      await this.#on(client, 'COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error instanceof CodedError ? error : this.#unavailable(error);
    } finally {
      client.release();
    }
  }

  #unavailable(error: unknown): Error {
    if (error instanceof CodedError) return error;
    const reason = (error as Error).message || (error as { code?: string }).code || String(error);
    return new ClusterUnavailableError(`PostgreSQL at ${this.description} could not be reached or refused the request: ${reason}`, { cause: error });
  }
}

function machineRow(row: Record<string, unknown>): MachineRow {
  const commit = row.commit === null ? null : Commit.safeParse(row.commit);
  return {
    name: row.name as string,
    owner: row.owner as string | null,
    ownerUrl: row.owner_url as string | null,
    ownerLive: row.owner_live as boolean,
    ownerLeaseLeftMs: Number(row.owner_lease_left_ms ?? 0),
    generation: Number(row.generation),
    nextSeq: Number(row.next_seq),
    commit: commit?.success ? commit.data : null,
    manifest: row.manifest,
    deleted: row.deleted as boolean,
  };
}
