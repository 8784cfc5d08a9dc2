import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { startTestCluster, type TestClusterNodes } from '../helpers/cluster-nodes.ts';
import { finished } from '../helpers/processes.ts';
import { eventually, valueOf } from '../helpers/machines.ts';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
/** A node that keeps this much free (a terabyte, in MiB) has no room for machines on any computer that runs the tests. */
const NO_ROOM = ['--memory-reserve', String(2 ** 20)];

/** Where machines go by load: new ones to the node with room, a node short of room and a draining node hand theirs over. */
describe('a cluster placing machines by load', { timeout: 300_000 }, () => {
  let cluster: TestClusterNodes;

  before(async () => {
    cluster = await startTestCluster();
  });

  after(async () => {
    await cluster?.close();
  });

  const ownerOf = async (name: string) => (await cluster.directory.locate(name))?.ownerUrl ?? null;

  it('makes new machines on the node with room, and a node short of room hands its idle machines over', async () => {
    // Alone, the node short of room still takes what it is asked for: nowhere has more.
    const full = await cluster.node({ flags: NO_ROOM });
    const { name: early } = await full.client().create();
    await full.client().run(early, 'kept = "made while alone"');
    assert.equal(await ownerOf(early), full.url);
    const roomy = await cluster.node();
    // Asked of the full node, over HTTP and MCP, new machines are made on the one with room.
    const { name: made } = await full.client().create();
    assert.equal(await ownerOf(made), roomy.url);
    const mcp = await cluster.mcpOn(full);
    try {
      const created = await mcp.callTool({ name: 'create-python-repl', arguments: {} });
      assert.equal(await ownerOf((created.structuredContent as { replId: string }).replId), roomy.url);
    } finally {
      await mcp.close();
    }
    // The full node hands its idle machine over; its next use runs it on the other, with what it held.
    await eventually(async () => (await ownerOf(early)) !== full.url, 30_000, 'the full node to hand its machine over');
    const ran = await full.client().run(early, 'kept');
    assert.equal(valueOf(ran.result), "'made while alone'");
    assert.equal(await ownerOf(early), roomy.url);
    assert.doesNotMatch(JSON.stringify(ran.result), /lost/, 'a hand-over loses nothing');
  });

  it('drains a node: every machine moves, an instruction running meanwhile ends first, nothing is lost, and the node stops', async () => {
    const [a, b] = await Promise.all([cluster.node(), cluster.node()]);
    const onA = a.client();
    const names: string[] = [];
    for (const value of [1, 2]) {
      const { name } = await onA.create();
      await onA.run(name, `x = ${value}`);
      names.push(name);
    }
    const busy = names[0]!;
    const running = await onA.start(busy, 'print("running", flush=True)\nimport time\ntime.sleep(2)\nx = x + 10', { timeoutSeconds: 0 });
    await new Promise<void>((resolve) => void onA.follow(busy, running, (chunk) => chunk.data.includes('running') && resolve()).catch(() => {}));
    const drained = await finished(spawn(process.execPath, [CLI, 'serve', '--drain', '--data-dir', a.dataDir], { stdio: ['ignore', 'pipe', 'pipe'] }));
    assert.equal(drained.code, 0, drained.stderr);
    assert.match(drained.stderr, /has handed over its machines and stopped/);
    assert.notEqual(a.child.exitCode ?? a.child.signalCode, null, 'the drained node stopped');
    // Let go, for the next node asked (b, where the test still follows the instruction that ran).
    for (const name of names) assert.notEqual(await ownerOf(name), a.url, `${name} left the drained node`);
    const onB = b.client();
    assert.deepEqual(await Promise.all(names.map(async (name) => valueOf((await onB.run(name, 'x')).result))), ['11', '2']);
    assert.deepEqual(
      (await onB.history(busy)).map((h) => h.seq),
      [0, 1, 2],
      'the instruction that ran during the drain is kept, and numbers go on',
    );
  });
});
