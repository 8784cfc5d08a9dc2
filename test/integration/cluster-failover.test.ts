import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { startTestCluster, type TestClusterNodes, type TestNode } from '../helpers/cluster-nodes.ts';
import { finished } from '../helpers/processes.ts';
import { TEST_PYTHON, valueOf } from '../helpers/machines.ts';
import type { ExecResult } from '../../src/shared/types.ts';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const LOST = /The node that ran this machine \(http:\/\/[\d.:]+\) stopped unexpectedly\. .*Effects of instructions 1–1 are lost/;

/** What a result says besides its value. */
const noticesOf = (result: ExecResult) => ((result as { data?: { notices?: string[] } }).data?.notices ?? []).join('\n');

/** `POST exec`, then `GET result`, as the ForeverVM SDK sends them: each answer's status and body as they came. */
async function execOverHttp(n: TestNode, name: string, code: string): Promise<{ seq: number; result: ExecResult }> {
  const headers = { authorization: `Bearer ${n.token}`, 'content-type': 'application/json' };
  const exec = await fetch(`${n.url}/v1/machine/${name}/exec`, { method: 'POST', headers, body: JSON.stringify({ instruction: { code } }) });
  const sent = (await exec.json()) as { instruction_seq: number };
  assert.equal(exec.status, 200, `exec of ${name} through ${n.url}: ${JSON.stringify(sent)}`);
  const answer = await fetch(`${n.url}/v1/machine/${name}/exec/${sent.instruction_seq}/result`, { headers });
  const read = (await answer.json()) as { result: ExecResult };
  assert.equal(answer.status, 200, `result of ${name} through ${n.url}: ${JSON.stringify(read)}`);
  return { seq: sent.instruction_seq, result: read.result };
}

/**
 * kill -9 of the node that runs machines, while requests for them arrive at the other nodes over
 * every surface: each waits for the dead node's lease to end, then runs where the machine went,
 * and the first result says what was lost.
 */
describe('a cluster when a node dies', { timeout: 300_000 }, () => {
  let cluster: TestClusterNodes;

  before(async () => {
    cluster = await startTestCluster();
  });

  after(async () => {
    await cluster?.close();
  });

  it('runs every request that came meanwhile on the machines’ new nodes: ForeverVM HTTP, the WebSocket REPL, MCP and the CLI', async () => {
    const [a, b, c] = await Promise.all([cluster.node(), cluster.node(), cluster.node()]);
    const onA = a.client();
    const names: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { name } = await onA.create();
      await onA.run(name, 'n = 1');
      names.push(name);
    }
    await Promise.all(names.map((name) => cluster.committed(name, 0)));
    // Instruction 1 of each runs when a dies: its effects, and its record, go with a.
    for (const name of names) {
      const running = await onA.start(name, 'n = 2\nprint("running", flush=True)\nimport time\ntime.sleep(120)', { timeoutSeconds: 0 });
      await new Promise<void>((resolve) => void onA.follow(name, running, (chunk) => chunk.data.includes('running') && resolve()).catch(() => {}));
    }
    await a.kill();
    const [overHttp, overRepl, overMcp, overCli, raced] = names as [string, string, string, string, string];
    const mcp = await cluster.mcpOn(b);
    try {
      const [http, repl, tool, cli, race] = await Promise.all([
        execOverHttp(b, overHttp, 'n'),
        c.client().run(overRepl, 'n'),
        mcp.callTool({ name: 'run-python-in-repl', arguments: { replId: overMcp, pythonCode: 'n' } }) as Promise<CallToolResult>,
        finished(
          spawn(process.execPath, [CLI, '--server', c.url, 'exec', '--machine', overCli, 'n'], {
            env: { ...process.env, PERENNIAL_TOKEN: c.token },
            stdio: ['ignore', 'pipe', 'pipe'],
          }),
        ),
        // Two nodes race for the same orphaned machine: one takes it, the other forwards to it.
        Promise.all([execOverHttp(b, raced, 'n'), execOverHttp(c, raced, 'n')]),
      ]);
      assert.equal(valueOf(http.result), '1');
      assert.match(noticesOf(http.result), LOST);
      assert.equal(http.seq, 2, 'numbers go on after the ones the dead node gave');
      assert.equal(valueOf(repl.result), '1');
      assert.match(noticesOf(repl.result), LOST);
      assert.ok(!tool.isError, JSON.stringify(tool.content));
      assert.equal((tool.structuredContent as { value: string }).value, '1');
      assert.match(JSON.stringify(tool.content), LOST);
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal(cli.stdout.trim(), '1');
      assert.match(cli.stderr + cli.stdout, LOST);
      assert.deepEqual(
        race.map((r) => valueOf(r.result)),
        ['1', '1'],
      );
      assert.deepEqual(race.map((r) => r.seq).sort(), [2, 3], 'one number each, after the lost one');
      assert.equal(race.filter((r) => LOST.test(noticesOf(r.result))).length, 1, 'the loss is said once, in the first result');
      assert.equal((await cluster.directory.locate(raced))?.generation, 2, 'taken once, by one of the two');
      for (const name of names) {
        const lost = (await b.client().history(name)).find((h) => h.seq === 1);
        assert.match(JSON.stringify(lost?.result), /The server stopped while this instruction ran/, `${name}'s lost instruction`);
      }
    } finally {
      await mcp.close();
    }
  });

  it('never serves a stopped node’s data dir as a server of its own: a command on it refuses, and the node started again serves the cluster', async () => {
    const [a, b] = await Promise.all([cluster.node(), cluster.node()]);
    const { name } = await a.client().create();
    await a.client().run(name, 'z = 1');
    await a.stop();
    const cli = (...args: string[]) =>
      finished(
        spawn(process.execPath, [CLI, '--data-dir', a.dataDir, ...args], {
          env: { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON },
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      );
    // The cell would run on the cache's stale copy, and the cluster would never see it.
    const refused = await cli('exec', '--machine', name, 'z = 2');
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /is the cache of a cluster node .*Reach them through a node: perennial --server .*or start this node again: perennial serve --data-dir/,
    );
    assert.equal(valueOf((await b.client().run(name, 'z')).result), '1', 'the cluster’s machine is untouched');
    // Started again with no settings given, the data dir is the node it was, of the same cluster.
    const again = await cluster.node({ dataDir: a.dataDir, again: true });
    assert.equal(again.url, a.url, 'where it listened before');
    const ran = await cli('exec', '--machine', name, 'z = z + 1\nz');
    assert.equal(ran.code, 0, ran.stderr);
    assert.equal(ran.stdout.trim(), '2');
    assert.equal(valueOf((await b.client().run(name, 'z')).result), '2', 'the work done through the node is the cluster’s');
  });
});
