import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startTestCluster, type TestClusterNodes } from '../helpers/cluster-nodes.ts';
import { valueOf } from '../helpers/machines.ts';

/** A node of the build before this changes to the cluster (scripts/make-fixture.sh build). */
const EARLIER = new URL('../fixtures/builds/3a61769/', import.meta.url);
const EARLIER_CLI = fileURLToPath(new URL('dist/cli.js', EARLIER));
const EARLIER_COMMIT = readFileSync(new URL('COMMIT', EARLIER), 'utf8').trim().slice(0, 7);

/**
 * A rolling update: an operator updates the nodes one by one, so a node of the earlier build runs
 * beside today's, on the same tables and bucket, each answering for the other's machines, until
 * it too is replaced by today's build on its own data dir.
 */
describe(`a cluster updated node by node, from the build of ${EARLIER_COMMIT} to today's`, { timeout: 300_000 }, () => {
  let cluster: TestClusterNodes;

  before(async () => {
    cluster = await startTestCluster();
  });

  after(async () => {
    await cluster?.close();
  });

  it('runs an earlier node beside a new one, each serving the other’s machines, then moves the earlier one’s machines to the update', async () => {
    const earlier = await cluster.node({ cli: EARLIER_CLI });
    const today = await cluster.node();
    const onEarlier = earlier.client();
    const onToday = today.client();
    const { name: older } = await onEarlier.create();
    await onEarlier.run(older, 'x = "made on the earlier node"');
    const { name: newer } = await onToday.create();
    await onToday.run(newer, 'y = "made on today\'s node"');
    // Each answers for the other's machine, and lists both (the earlier build gives `node` only for another node's).
    assert.equal(valueOf((await onToday.run(older, 'x')).result), "'made on the earlier node'");
    assert.equal(valueOf((await onEarlier.run(newer, 'y')).result), '"made on today\'s node"');
    const node = async (client: typeof onToday, name: string) => (await client.list()).find((m) => m.name === name)?.node;
    assert.deepEqual(await Promise.all([node(onToday, older), node(onToday, newer), node(onEarlier, newer)]), [earlier.url, today.url, today.url]);
    assert.ok((await onEarlier.list()).some((m) => m.name === older));
    // The earlier node stops (its machines committed and let go) and today's takes its data dir.
    // Its REPLs close first: that build's stop waited for a WebSocket it carried to another node.
    await onEarlier.close();
    await earlier.stop();
    const updated = await cluster.node({ dataDir: earlier.dataDir });
    assert.equal(valueOf((await updated.client().run(older, 'x')).result), "'made on the earlier node'");
    assert.deepEqual(
      (await updated.client().history(older)).map((h) => h.seq),
      [0, 1, 2],
      'its history, whole',
    );
    assert.equal(valueOf((await onToday.run(newer, 'y')).result), '"made on today\'s node"');
  });
});
