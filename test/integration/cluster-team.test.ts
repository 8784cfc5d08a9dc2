// A team's server on a cluster of three nodes: the team's document and audit log are the
// database's, so a key made on one node works on every node, a revocation on one is refused on
// every other within seconds, a person's MCP on one node reaches a machine another node runs
// only as that person may, and an admin reads the whole cluster's audit log from any node.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { HttpClient } from '../../src/client/http-client.ts';
import { ON_BEHALF_HEADER } from '../../src/team/principal.ts';
import { startTestCluster, type TestClusterNodes, type TestNode } from '../helpers/cluster-nodes.ts';
import { eventually, outcome, valueOf } from '../helpers/machines.ts';
import { call, streamableTransport, textOf } from '../helpers/mcp-clients.ts';

describe("a team's server on a cluster", { timeout: 600_000 }, () => {
  let cluster: TestClusterNodes;
  let a: TestNode;
  let b: TestNode;
  let c: TestNode;
  let aliceKey: string;
  let bobKey: string;
  let machine: string;
  const on = (node: TestNode, token: string) => new HttpClient({ baseUrl: node.url, token });

  before(async () => {
    cluster = await startTestCluster();
    // People make sandbox machines only: the nodes' engine.
    const sandbox = () => cluster.node({ engine: 'sandbox' });
    [a, b, c] = await Promise.all([sandbox(), sandbox(), sandbox()]);
    // A machine from before the team, made through c: the team's owner gets it whichever node runs init.
    const before = await c.client().create({ name: 'before-team' });
    aliceKey = (await a.client().team('init', { owner: 'alice' })).key;
    const alice = on(b, aliceKey);
    await alice.team('addPerson', { name: 'bob' });
    bobKey = (await alice.team('createKey', { person: 'bob', name: 'laptop', scopes: ['read', 'run', 'manage'] })).key;
    assert.equal((await alice.list()).find((m) => m.name === before.name)?.access?.owner, 'alice');
    machine = (await on(a, aliceKey).create({ name: 'alices' })).name;
    await on(a, aliceKey).run(machine, 'secret = 42');
  });

  after(async () => {
    await cluster?.close();
  });

  it('serves one team on every node: keys made on one work on all, and a machine that is not yours does not exist on any', async () => {
    for (const node of [a, b, c]) {
      assert.equal((await on(node, bobKey).whoami()).account, 'bob', `bob's key works on ${node.url}`);
      const bob = on(node, bobKey);
      assert.equal(await outcome(() => bob.get(machine)), 'MachineNotFound');
      assert.equal(await outcome(() => bob.run(machine, 'secret')), 'MachineNotFound');
      assert.ok(!(await bob.list()).some((m) => m.name === machine), `bob's listing on ${node.url} has none of alice's`);
    }
    // Alice's machine runs on a; through c, her request is forwarded there with her key and answered.
    assert.equal(valueOf((await on(c, aliceKey).run(machine, 'secret + 1')).result), '43');
    // A header naming a person counts only with the cluster's token: bob cannot pass for alice.
    const forged = await fetch(`${b.url}/v1/machine/${machine}`, {
      headers: {
        authorization: `Bearer ${bobKey}`,
        [ON_BEHALF_HEADER]: JSON.stringify({ person: 'alice', scopes: ['read', 'run', 'manage'], credential: 'x' }),
      },
    });
    assert.equal(forged.status, 404);
    const nobody = await fetch(`${b.url}/v1/machine/${machine}`, {
      headers: { authorization: `Bearer ${b.token}`, [ON_BEHALF_HEADER]: JSON.stringify({ person: 'mallory', scopes: ['read'], credential: 'x' }) },
    });
    assert.equal(nobody.status, 401, 'the cluster token calling for a person the team does not know is refused');
  });

  it("carries the person through a node's MCP to the node that runs the machine, with their rights there", async () => {
    const mcp = new Client({ name: 'cluster-team-test', version: '1' });
    await mcp.connect(streamableTransport({ url: b.url, token: bobKey }));
    try {
      const refused = await call(mcp, 'run-python-in-repl', { replId: machine, pythonCode: 'secret' });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /not found|does not exist/i);
      assert.doesNotMatch(textOf(refused), /42/);
      await on(c, aliceKey).team('share', { name: machine, with: 'bob', right: 'read' });
      const readOnly = await call(mcp, 'run-python-in-repl', { replId: machine, pythonCode: 'secret' });
      assert.equal(readOnly.isError, true, 'a share to read does not run code, on the node that runs the machine');
      assert.match(textOf(readOnly), /shared with you to read/);
      await on(a, aliceKey).team('share', { name: machine, with: 'bob', right: 'run' });
      const ran = await call(mcp, 'run-python-in-repl', { replId: machine, pythonCode: 'secret * 2' });
      assert.equal(ran.isError, undefined, textOf(ran));
      assert.match(textOf(ran), /84/);
      // Bob's own machine, made through his MCP on b, is his on every node.
      const made = textOf(await call(mcp, 'create-python-repl', {}));
      const mine = /^[a-z0-9-]+$/m.exec(made)?.[0];
      assert.ok(mine, made);
      assert.equal((await on(c, bobKey).list()).find((m) => m.name === mine)?.access?.owner, 'bob');
      assert.equal(await outcome(() => on(a, aliceKey).get(mine)), 'MachineNotFound');
    } finally {
      await mcp.close();
    }
  });

  it('refuses a revoked key on every node within seconds, and keeps the whole cluster’s audit log in the database', async () => {
    const spare = await on(a, aliceKey).team('createKey', { person: 'bob', name: 'spare', scopes: ['read'] });
    for (const node of [a, b, c]) assert.equal((await on(node, spare.key).whoami()).account, 'bob');
    const revokedAt = performance.now();
    await on(c, aliceKey).team('revokeKey', { id: spare.keyInfo.id });
    for (const node of [a, b])
      await eventually(async () => (await outcome(() => on(node, spare.key).whoami())) === 'Unauthorized', 5000, `the revoked key refused on ${node.url}`);
    console.log(`A key revoked on one node was refused on the two others after ${Math.round(performance.now() - revokedAt)} ms.`);

    // Admin reads the audit log from b: entries from every node, refusals among them, no code.
    const entries = await on(b, aliceKey).team('audit', {});
    const actions = new Set(entries.map((e) => e.action));
    for (const action of ['made', 'ran', 'shared', 'key made', 'key revoked'])
      assert.ok(actions.has(action), `the audit log has "${action}": ${[...actions].join(', ')}`);
    assert.ok(
      entries.some((e) => e.who === 'bob' && e.machine === machine && e.outcome === 'refused'),
      "bob's refusals are kept",
    );
    assert.ok(!JSON.stringify(entries).includes('secret * 2'), 'no code is copied into the audit log');
    assert.equal(await outcome(() => on(a, bobKey).team('audit', {})), 'MissingScope');
  });
});
