import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ClusterDirectory } from '../../src/cluster/directory.ts';
import { ForeverVMClient } from '../../src/client/forevervm-client.ts';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestCluster, type ClusterEngines, type TestClusterNodes, type TestNode } from '../helpers/cluster-nodes.ts';
import { finished } from '../helpers/processes.ts';
import { eventually, tempDataDir, valueOf } from '../helpers/machines.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { HttpClient } from '../../src/client/http-client.ts';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Perennial nodes as an operator runs them: `perennial serve --cluster --store`, each a process
 * with a data dir of its own, on a real PostgreSQL and an S3-compatible bucket (s3rver). Any node
 * answers for any machine; a machine goes where it is asked for when its node is gone.
 */
describe('a cluster of nodes', { timeout: 600_000 }, () => {
  let cluster: TestClusterNodes;
  let engines: ClusterEngines;
  let directory: ClusterDirectory;
  const node = (options?: Parameters<TestClusterNodes['node']>[0]) => cluster.node(options);
  const committed = (name: string, seq: number) => cluster.committed(name, seq);
  const mcpOn = (n: TestNode) => cluster.mcpOn(n);
  /** Two nodes, and a machine on the first that has run `code` as its instruction 0, committed. */
  const machineOnA = async (code: string) => {
    const a = await node();
    const b = await node();
    const onA = a.client();
    const { name } = await onA.create();
    await onA.run(name, code);
    await committed(name, 0);
    return { a, b, onA, name };
  };

  before(async () => {
    cluster = await startTestCluster();
    ({ engines, directory } = cluster);
  });

  after(async () => {
    await cluster?.close();
  });

  it('answers for any machine on any node: the ForeverVM API, the WebSocket REPL and the listing', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    assert.equal(a.token, b.token, 'every node takes the first one’s token');
    const onA = a.client();
    const onB = b.client();
    const { name } = await onA.create({ tags: { team: 'x' } });
    assert.equal(valueOf((await onA.run(name, 'x = 41\nx')).result), '41');
    // Through b: over the WebSocket REPL (HttpClient.run), forwarded to a, which runs the machine.
    const viaB = await onB.run(name, 'x + 1');
    assert.equal(valueOf(viaB.result), '42');
    assert.equal(viaB.seq, 1);
    // The ForeverVM protocol's own endpoints, as its SDK calls them, through b too.
    const wire = new ForeverVMClient({ baseUrl: b.url, token: b.token });
    const seq = (await wire.exec(name, 'x * 2', {})).instruction_seq;
    assert.equal(valueOf(await wire.result(name, seq)), '82');
    const listed = (await onB.list()).find((m) => m.name === name);
    assert.equal(listed?.node, a.url, 'b lists the machine, run by a');
    assert.deepEqual(listed?.tags, { team: 'x' });
    assert.equal((await onB.get(name)).state, 'warm', "b's answer about the machine comes from a");
  });

  it('serves MCP on any node: its tools reach a machine another node runs, and its tasks are any node’s to read', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const { name } = await a.client().create();
    await a.client().run(name, 'import math\nradius = 2');
    const mcp = await mcpOn(b);
    try {
      const text = (result: unknown) => ((result as CallToolResult).content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('\n');
      const ran = await mcp.callTool({ name: 'run-python-in-repl', arguments: { replId: name, pythonCode: 'round(math.pi * radius ** 2, 2)' } });
      assert.match(text(ran), /12\.57/);
      assert.match(text(await mcp.callTool({ name: 'list-repl-variables', arguments: { replId: name } })), /radius/);
      assert.match(text(await mcp.callTool({ name: 'list-python-repls', arguments: {} })), new RegExp(name));
    } finally {
      await mcp.close();
    }
  });

  it('serves the perennial command on any node (--server): exec, listing, status', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const { name } = await a.client().create();
    await a.client().run(name, 'greeting = "hello from a"');
    const cli = (...args: string[]) =>
      finished(
        spawn(process.execPath, [CLI, '--server', b.url, ...args], { env: { ...process.env, PERENNIAL_TOKEN: b.token }, stdio: ['ignore', 'pipe', 'pipe'] }),
      );
    const ran = await cli('exec', '--machine', name, 'greeting');
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stdout.trim(), "'hello from a'");
    const listed = await cli('machine', 'list', '--json');
    assert.equal((JSON.parse(listed.stdout) as Array<{ name: string; node?: string }>).find((m) => m.name === name)?.node, a.url);
    // The table as b lists it: the machine as a runs it now (its runtime, its two instructions, warm), and where.
    const table = (await cli('machine', 'list')).stdout.split('\n');
    assert.match(table[0]!, /NAME +ENGINE +RUNTIME +STATE +INSTRUCTIONS +NODE +CREATED/);
    assert.match(table.find((line) => line.startsWith(name)) ?? '', new RegExp(`python +Python 3\\.\\d+\\.\\d+ +warm +2 +${escaped(a.url)} `));
    const status = (await cli('status')).stdout;
    assert.match(status, new RegExp(`at ${escaped(b.url)}`));
    assert.match(status, /machines: 0 \(0 warm, 0 swapped\) on this node/);
    assert.match(
      status,
      /cluster: postgres:\/\/perennial@127\.0\.0\.1:\d+\/cluster with s3:\/\/perennial-test\/cluster at http:\/\/127\.0\.0\.1:\d+: \d+ machines?, \d+ of \d+ nodes live/,
    );
    assert.match(status, new RegExp(`  ${escaped(a.url)}: 1 machine, Perennial`));
    assert.match(status, new RegExp(`  ${escaped(b.url)} \\(this node\\): 0 machines`));
    const noToken = await finished(
      spawn(process.execPath, [CLI, '--server', b.url, 'machine', 'list'], { env: { ...process.env, PERENNIAL_TOKEN: '' }, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
    assert.notEqual(noToken.code, 0);
    assert.match(
      noToken.stderr,
      /needs a token: your key on a team's server \(perennial login --server .*\), or the server's own \(its data dir's server-token\) in PERENNIAL_TOKEN/,
    );
  });

  it('tells the clients of every node of every machine’s changes: /v1/events and MCP list-changed', async () => {
    const [a, b] = await Promise.all([node(), node()]);
    const seenOnB = b.events();
    const mcp = await mcpOn(b);
    try {
      // Once b's stream tells of a first machine, it is open.
      const { name: first } = await a.client().create();
      await eventually(() => seenOnB.seen.some((e) => e.type === 'created' && e.machine.name === first), 30_000, "b's stream to open");
      const listChanged = () => new Promise<void>((resolve) => mcp.setNotificationHandler('notifications/resources/list_changed', () => resolve()));
      const made = listChanged();
      const { name } = await a.client().create({ tags: { made: 'on a' } });
      await made;
      await a.client().run(name, '1 / 0');
      const deleted = listChanged();
      await a.client().delete(name);
      await deleted;
      await eventually(() => seenOnB.seen.some((e) => e.type === 'deleted' && e.name === name), 30_000, "b's stream to tell of the deletion");
      const created = seenOnB.seen.find((e) => e.type === 'created' && e.machine.name === name);
      assert.ok(created?.type === 'created');
      assert.deepEqual([created.machine.node, created.machine.tags], [a.url, { made: 'on a' }], 'the machine as its node gives it');
      assert.ok(seenOnB.seen.some((e) => e.type === 'instruction' && e.name === name && e.seq === 0 && e.error));
    } finally {
      seenOnB.stop();
      await mcp.close();
    }
  });

  it('serves 40 agents over two nodes, each agent’s calls going through both, with nothing lost', async () => {
    const nodesOf = await Promise.all([node(), node()]);
    const agent = async (i: number) => {
      const [home, other] = [await mcpOn(nodesOf[i % 2]!), await mcpOn(nodesOf[(i + 1) % 2]!)];
      try {
        const made = await home.callTool({ name: 'create-python-repl', arguments: {} });
        const replId = (made.structuredContent as { replId: string } | undefined)?.replId;
        if (!replId) throw new Error(`no REPL made: ${JSON.stringify(made.content)}`);
        const failures: string[] = [];
        for (let call = 0; call < 10; call++) {
          const result = await (call % 2 ? other : home).callTool({
            name: 'run-python-in-repl',
            arguments: { replId, pythonCode: 'n = globals().get("n", 0) + 1\nn' },
          });
          if (result.isError) failures.push(JSON.stringify(result.content));
        }
        const last = await other.callTool({ name: 'run-python-in-repl', arguments: { replId, pythonCode: 'n' } });
        return { failures, counted: (last.structuredContent as { value: string | null }).value };
      } finally {
        await Promise.all([home.close(), other.close()]);
      }
    };
    const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => agent(i)));
    assert.deepEqual(
      outcomes.flatMap((o) => o.failures),
      [],
    );
    assert.deepEqual(
      outcomes.map((o) => o.counted),
      Array(40).fill('10'),
      'every agent’s machine counted each of its calls once',
    );
  });

  it('brings a computer’s own machines into the cluster when its data dir becomes a node’s, and keeps aside one whose name is taken', async () => {
    const b = await node();
    await b.client().create({ name: 'taken-name' });
    await b.client().run('taken-name', 'whose = "the cluster\'s"');
    const data = await tempDataDir();
    const alone = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
    const client = new HttpClient({ baseUrl: alone.url, token: alone.token });
    const { name } = await client.create({ tags: { from: 'laptop' } });
    await client.run(name, 'mine = "made before the cluster"');
    await client.create({ name: 'taken-name' });
    await client.run('taken-name', 'whose = "the laptop\'s"');
    await client.close();
    await alone.close();
    const a = await node({ dataDir: data.dir });
    assert.equal(valueOf((await b.client().run(name, 'mine')).result), "'made before the cluster'");
    assert.deepEqual((await b.client().get(name)).tags, { from: 'laptop' });
    // The cluster's machine of that name is untouched, and the laptop's is kept whole, aside.
    assert.equal(valueOf((await a.client().run('taken-name', 'whose')).result), '"the cluster\'s"');
    const aside = readdirSync(join(data.dir, 'machines')).filter((entry) => entry.startsWith('.set-aside-taken-name-'));
    assert.equal(aside.length, 1);
    assert.match(readFileSync(join(data.dir, 'machines', aside[0]!, 'history.jsonl'), 'utf8'), /the laptop/);
    await a.stop();
    await data.cleanup();
  });

  it('hands a stopped node’s machines to whichever node is asked, with all they hold', async () => {
    const a = await node();
    const b = await node();
    const { name } = await a.client().create();
    await a.client().run(name, 'import os\nkept = "from a"\nopen("note.txt", "w").write("on disk")');
    await a.stop();
    const onB = b.client();
    assert.equal(valueOf((await onB.run(name, 'kept + " " + open("note.txt").read()')).result), "'from a on disk'");
    assert.equal((await onB.history(name)).length, 2);
    assert.equal((await onB.get(name)).node, undefined, 'b runs it now');
    // A node's data dir is a cache: without it, nothing committed is lost.
    await b.stop();
    await rm(b.dataDir, { recursive: true, force: true });
    const c = await node();
    assert.equal(valueOf((await c.client().run(name, 'kept')).result), "'from a'");
  });

  it('after kill -9 of its node, resumes a machine from its last commit, and says what was lost', async () => {
    const { a, b, onA, name } = await machineOnA('saved = 1');
    // Killed while it runs: instruction 1's effects, and its record, die with the node.
    const running = await onA.start(name, 'unsaved = 2\nprint("running", flush=True)\nimport time\ntime.sleep(120)', { timeoutSeconds: 0 });
    await new Promise<void>((resolve) => void onA.follow(name, running, (chunk) => chunk.data.includes('running') && resolve()).catch(() => {}));
    await a.kill();
    const resumed = await b.client().run(name, 'saved');
    assert.equal(valueOf(resumed.result), '1');
    assert.equal(resumed.seq, 2, 'numbers go on after the ones the dead node gave');
    const notices = (resumed.result as { data?: { notices?: string[] } }).data?.notices ?? [];
    assert.match(
      notices.join('\n'),
      new RegExp(`The node that ran this machine \\(${a.url.replace(/\./g, '\\.')}\\) stopped unexpectedly\\. .*Effects of instructions 1–1 are lost`),
    );
    const lost = (await b.client().history(name)).find((h) => h.seq === 1);
    assert.match(JSON.stringify(lost?.result), /The server stopped while this instruction ran/);
    assert.match(lost?.code ?? '', /lost with the node that ran it/);
    assert.match(JSON.stringify((await b.client().run(name, 'unsaved')).result), /NameError/);
    // The bucket keeps what the machine's last commit needs, in the home of its new owner's generation, and no more.
    await committed(name, 3);
    const row = await directory.locate(name);
    const keys = () => engines.bucket.keys().filter((key) => key.startsWith(`cluster/machines/${name}/`));
    await eventually(() => keys().every((key) => key.startsWith(`cluster/${row!.commit!.home}/`)), 30_000, "the older generation's objects to go");
    await b.client().delete(name);
    assert.deepEqual(keys(), [], "a deleted machine's objects go with it");
  });

  it('moves a sandbox machine, its exact memory, to a node that had no base image: the base is the bucket’s, made once', async () => {
    const a = await node({ engine: 'sandbox' });
    const b = await node({ engine: 'sandbox', empty: true });
    const { name } = await a.client().create({ engine: 'sandbox' });
    const drawn = valueOf((await a.client().run(name, 'import random\nr = random.random()\ngen = (i * i for i in range(10))\nnext(gen)\nr')).result);
    await a.stop();
    // A generator mid-way is memory only a snapshot keeps: the patch on the base must meet the same base.
    const onB = b.client();
    assert.equal(valueOf((await onB.run(name, 'r')).result), drawn);
    assert.equal(valueOf((await onB.run(name, 'next(gen)')).result), '1');
    assert.equal(engines.bucket.keys().filter((key) => key.includes('/bases/')).length, 1, 'one base in the bucket');
  });

  it('rides out the bucket and PostgreSQL being down: clear errors, and nothing lost', async () => {
    const { a, b, onA, name } = await machineOnA('x = 1');
    await engines.bucket.pause();
    try {
      // The bucket down: the machine runs on, its state saved on its node, and says so.
      assert.equal(valueOf((await onA.run(name, 'x = 2\nx')).result), '2');
      await eventually(async () => (await onA.get(name)).warnings.some((w) => /saved on this node only/.test(w)), 30_000, 'the warning');
    } finally {
      await engines.bucket.resume();
    }
    // Back: the commit is sent again, and another node finds all of it.
    await committed(name, 1);
    await eventually(async () => !(await onA.get(name)).warnings.some((w) => /saved on this node only/.test(w)), 30_000, 'the warning to go');
    await engines.postgres.pause();
    try {
      // PostgreSQL down: no instruction number can be given out, so none runs, and the error says why.
      await assert.rejects(onA.run(name, 'x = 3'), /PostgreSQL at postgres:\/\/perennial@127\.0\.0\.1:\d+\/cluster could not be reached/);
    } finally {
      await engines.postgres.resume();
    }
    await a.stop();
    assert.equal(valueOf((await b.client().run(name, 'x')).result), '2');
    // A node that cannot reach the bucket at its start says so, and does not start.
    await engines.bucket.pause();
    try {
      await assert.rejects(node(), /The bucket s3:\/\/perennial-test\/cluster at http:\/\/127\.0\.0\.1:\d+ could not be reached/);
    } finally {
      await engines.bucket.resume();
    }
  });

  it('fences a node paused past its lease: another takes its machine over, and nothing the first does after it wakes is kept', async () => {
    const { a, b, onA, name } = await machineOnA('v = "a0"');
    const eventsOfA = a.events();
    const running = await onA.start(name, 'print("running", flush=True)\nimport time\ntime.sleep(3)\nv = "a1"', { timeoutSeconds: 0 });
    await new Promise<void>((resolve) => void onA.follow(name, running, (chunk) => chunk.data.includes('running') && resolve()).catch(() => {}));
    a.child.kill('SIGSTOP');
    try {
      await eventually(async () => !(await directory.nodes()).find((n) => n.url === a.url)?.live, 30_000, "a's lease to run out");
      const onB = b.client();
      const taken = await onB.run(name, 'v');
      assert.equal(valueOf(taken.result), "'a0'");
      assert.equal(taken.seq, 2);
      assert.match(JSON.stringify(taken.result), /Effects of instructions 1–1 are lost/);
    } finally {
      a.child.kill('SIGCONT');
    }
    // Awake, a finishes instruction 1 and goes to save it: it learns it lost the machine, and keeps nothing.
    await eventually(
      () => eventsOfA.seen.some((e) => e.type === 'error' && e.name === name && /no longer owns|lease ran out/.test(e.message)),
      30_000,
      'a to say it lost the machine',
    );
    eventsOfA.stop();
    const row = await directory.locate(name);
    assert.equal(row?.generation, 2);
    assert.equal(row?.ownerUrl, b.url);
    // Asked through a, the machine is b's: its state is b's, its numbers go on from b's.
    const viaA = await a.client().run(name, 'v');
    assert.equal(valueOf(viaA.result), "'a0'");
    assert.equal(viaA.seq, 3);
    const history = await b.client().history(name);
    assert.deepEqual(
      history.map((h) => h.seq),
      [0, 1, 2, 3],
      'one instruction per number',
    );
  });
});
