import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ClusterDirectory, ClusterUnavailableError } from '../../src/cluster/directory.ts';
import { MachineMovedError } from '../../src/machines/machine-errors.ts';
import { startPostgres, type Postgres } from '../helpers/cluster-services.ts';

const LEASE_SECONDS = 2;

/**
 * The cluster's directory in a real PostgreSQL: leases, takeovers and the generation that fences
 * a node that lost its machine, driven as two nodes would drive it.
 */
describe('the cluster directory', { timeout: 120_000 }, () => {
  let postgres: Postgres;
  let url: string;
  let a: ClusterDirectory;
  let b: ClusterDirectory;

  before(async () => {
    postgres = await startPostgres();
    url = await postgres.database('directory');
    // Two nodes make the tables at once: one does, the other finds them.
    [a, b] = await Promise.all([ClusterDirectory.open(url, LEASE_SECONDS), ClusterDirectory.open(url, LEASE_SECONDS)]);
  });

  after(async () => {
    await a?.close();
    await b?.close();
    await postgres?.stop();
  });

  /** Resolves once `node`'s lease has run out, as the database sees it. */
  async function lapsed(id: string): Promise<void> {
    while ((await a.nodes()).some((node) => node.id === id && node.live)) await new Promise((resolve) => setTimeout(resolve, 100));
  }

  it('lets a node take a machine only when its owner let it go or stopped renewing, and fences the one that lost it', async () => {
    await a.join({ id: 'node-a', url: 'http://a', version: 'test' });
    await b.join({ id: 'node-b', url: 'http://b', version: 'test' });
    assert.equal(await a.claim('m', 'node-a', { name: 'm' }), true);
    assert.equal(await b.claim('m', 'node-b', { name: 'm' }), false, 'a name is claimed once');
    await a.reserve('m', 'node-a', 1);
    await a.reserve('m', 'node-a', 1);
    await a.commit('m', 'node-a', 1, { tree: 't1', home: 'machines/m/g1', seq: 0, at: 'now', bytes: 1, node: 'http://a' }, { name: 'm' });
    assert.equal(await b.take('m', 'node-b'), undefined, "a live owner's machine is not taken");
    // Node a stops renewing (it is paused): once its lease runs out, b takes the machine.
    await lapsed('node-a');
    const taken = await b.take('m', 'node-b');
    assert.equal(taken?.generation, 2);
    assert.equal(taken.before.owner, 'node-a');
    assert.equal(taken.before.nextSeq, 2, 'both numbers a gave out stay given');
    assert.deepEqual(taken.before.commit?.tree, 't1');
    // Node a comes back: its renewal works, but everything it writes for the machine is refused.
    assert.equal(await a.renew('node-a'), true);
    await assert.rejects(
      a.reserve('m', 'node-a', 1),
      (e: Error) => e instanceof MachineMovedError && /node http:\/\/b owns it now \(generation 2\)/.test(e.message),
    );
    await assert.rejects(
      a.commit('m', 'node-a', 1, { tree: 'stale', home: 'machines/m/g1', seq: 5, at: 'now', bytes: 1, node: 'http://a' }, { name: 'm' }),
      MachineMovedError,
    );
    await b.reserve('m', 'node-b', 2);
    const row = await b.locate('m');
    assert.equal(row?.commit?.tree, 't1', "the stale commit left the machine's state alone");
    assert.equal(row?.nextSeq, 3, 'numbers go on from where a left them: none is given twice');
    assert.equal(row?.owner, 'node-b');
  });

  it('gives an orphaned machine to one of two nodes that race for it, and the other sees it live', async () => {
    const c = await ClusterDirectory.open(url, LEASE_SECONDS);
    const holder = new pg.Client(url);
    await holder.connect();
    try {
      await c.join({ id: 'node-c', url: 'http://c', version: 'test' });
      assert.equal(await a.claim('orphan', 'node-a', { name: 'orphan' }), true);
      await lapsed('node-a');
      await Promise.all([b.renew('node-b'), c.renew('node-c')]);
      // Both takes wait on the row's lock, as two nodes asked for the machine at once do.
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM perennial_machines WHERE name = 'orphan' FOR UPDATE");
      const takes = Promise.all([b.take('orphan', 'node-b'), c.take('orphan', 'node-c')]);
      const waiting = async () =>
        Number((await holder.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'")).rows[0]!.n);
      while ((await waiting()) < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      await holder.query('COMMIT');
      const taken = (await takes).filter((t) => t !== undefined);
      assert.equal(taken.length, 1, 'one node takes it; the other finds its new owner live');
      assert.equal(taken[0]!.before.owner, 'node-a');
      assert.equal((await a.locate('orphan'))?.generation, 2);
    } finally {
      await holder.end();
      await c.close();
    }
  });

  it('hands machines over at once when their node leaves, and keeps a deleted name', async () => {
    await a.join({ id: 'node-a2', url: 'http://a', version: 'test' });
    assert.equal((await a.nodes()).filter((node) => node.url === 'http://a').length, 1, 'a node that comes back on its URL replaces the old one');
    assert.equal(await a.claim('kept', 'node-a2', { name: 'kept' }), true);
    assert.equal(await a.claim('dirty', 'node-a2', { name: 'dirty' }), true);
    await a.leave('node-a2', ['kept']);
    assert.equal((await b.take('kept', 'node-b'))?.before.owner, null, 'let go: taken at once');
    assert.equal(
      await b.take('dirty', 'node-b').then((t) => t?.before.owner),
      'node-a2',
      'not let go (its state was not committed): its lease has run out with its node',
    );
    await b.retire('kept', 'node-b', 2);
    assert.equal(await b.isUsed('kept'), true);
    assert.equal(await b.take('kept', 'node-b'), undefined);
    assert.ok(!(await b.machines()).some((m) => m.name === 'kept'));
  });

  it('holds a lock across nodes, which a node that dies lets go', async () => {
    const order: string[] = [];
    let release!: () => void;
    const held = a.withLock('base:x', async () => {
      order.push('a in');
      await new Promise<void>((resolve) => (release = resolve));
      order.push('a out');
    });
    while (!order.length) await new Promise((resolve) => setTimeout(resolve, 10));
    const waiting = b.withLock('base:x', async () => void order.push('b in'));
    release();
    await Promise.all([held, waiting]);
    assert.deepEqual(order, ['a in', 'a out', 'b in']);
  });

  it('says plainly when PostgreSQL is down, and works again when it is back', async () => {
    await postgres.pause();
    try {
      await assert.rejects(
        b.locate('m'),
        (e: Error) =>
          e instanceof ClusterUnavailableError && /PostgreSQL at postgres:\/\/perennial@127\.0\.0\.1:\d+\/directory could not be reached/.test(e.message),
      );
    } finally {
      await postgres.resume();
    }
    assert.equal((await b.locate('m'))?.owner, 'node-b');
  });
});
