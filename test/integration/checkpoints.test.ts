import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { HttpClient } from '../../src/client/http-client.ts';
import { MachineManager } from '../../src/machines/machine-manager.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import type { CheckpointInfo } from '../../src/shared/types.ts';
import { foreverVMOnlyProxy } from '../helpers/forevervm-only-proxy.ts';
import { ENGINES_UNDER_TEST, TEST_PYTHON, eventually, tempDataDir, valueOf } from '../helpers/machines.ts';
import { textOf } from '../helpers/mcp-clients.ts';

const HOST = fileURLToPath(new URL('../helpers/manager-host.ts', import.meta.url));

/**
 * Fork, checkpoints and rollback through a real server and the MCP SDK client, on both engines:
 * what the tools promise, and that a machine and its other checkpoints stay whole when asked
 * something impossible.
 */
describe('fork, checkpoints and rollback', { timeout: 300_000 }, () => {
  let server: LocalServer;
  let client: Client;
  let cleanup: () => Promise<void>;

  before(async () => {
    const data = await tempDataDir();
    cleanup = data.cleanup;
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python', saveDelayMs: 100 });
    client = new Client({ name: 'perennial-tests', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } }),
    );
  });
  after(async () => {
    await client.close();
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await cleanup();
  });

  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
  const value = async (replId: string, pythonCode: string) => {
    const result = await call('run-python-in-repl', { replId, pythonCode });
    const structured = result.structuredContent as { value: string | null; error: string | null };
    assert.equal(structured.error, null, structured.error ?? '');
    return structured.value;
  };
  const checkpoints = async (replId: string) =>
    ((await call('list-repl-checkpoints', { replId })).structuredContent as { checkpoints: CheckpointInfo[] }).checkpoints;

  for (const engine of ENGINES_UNDER_TEST) {
    describe(`${engine} engine`, () => {
      it('forks: the fork has the state and files, then the two diverge, and deleting the origin leaves the fork whole', async () => {
        const origin = ((await call('create-python-repl', { engine, tags: { project: 'p' } })).structuredContent as { replId: string }).replId;
        await value(origin, 'x = 2\nopen("f.txt", "w").write("two")\ndef double(v):\n    return v * 2');
        const forked = await call('fork-python-repl', { replId: origin, tags: { try: 'risky' } });
        const fork = (forked.structuredContent as { replId: string }).replId;
        assert.equal(textOf(forked), fork);
        assert.notEqual(fork, origin);
        assert.deepEqual(server.manager.get(fork).tags, { project: 'p', forked_from: origin, try: 'risky' });
        assert.equal(await value(fork, 'double(x), open("f.txt").read()'), "(4, 'two')");
        await value(fork, 'x = 30\nopen("f.txt", "w").write("thirty")');
        assert.equal(await value(origin, 'x, open("f.txt").read()'), "(2, 'two')");
        await call('delete-python-repl', { replId: origin });
        assert.equal(await value(fork, 'x, open("f.txt").read()'), "(30, 'thirty')");
        await server.manager.swap(fork);
        assert.equal(await value(fork, 'double(x)'), '60');
        await call('delete-python-repl', { replId: fork });
      });

      it('rolls back to a named checkpoint: variables and files, recorded in the history, and the rollback can be undone', async () => {
        const replId = ((await call('create-python-repl', { engine })).structuredContent as { replId: string }).replId;
        await value(replId, 'x = 1\nopen("f.txt", "w").write("one")');
        const taken = await call('checkpoint-python-repl', { replId, label: 'one' });
        const checkpoint = (taken.structuredContent as { checkpoint: CheckpointInfo }).checkpoint;
        assert.deepEqual([checkpoint.label, checkpoint.seq, checkpoint.auto], ['one', 1, false]);
        await value(replId, 'x = 2\ny = "later"\nopen("f.txt", "w").write("two")\nimport os\nos.makedirs("new", exist_ok=True)');
        const rolled = await call('rollback-python-repl', { replId, checkpoint: 'one' });
        assert.equal(rolled.isError, undefined, textOf(rolled));
        const { seq, notes } = rolled.structuredContent as { seq: number; notes: string[] };
        assert.deepEqual(notes, [], 'nothing the rollback could not do');
        assert.equal(
          await value(replId, 'x, "y" in globals(), open("f.txt").read(), os.path.exists("new") if "os" in globals() else __import__("os").path.exists("new")'),
          "(1, False, 'one', False)",
        );
        const history = (await server.manager.history(replId)).find((entry) => entry.seq === seq)!;
        assert.match(history.code, /^# perennial: rollback to checkpoint \d+ \("one"\)$/);
        assert.match(
          (history.result as { data: { notices: string[] } }).data.notices[0]!,
          /^Rolled back to checkpoint \d+ \("one"\), taken before instruction 1/,
        );
        // The state left behind was saved as an automatic checkpoint: roll forward to it.
        const left = (await checkpoints(replId)).filter((c) => c.auto && c.seq === 2).at(-1);
        assert.ok(left, `an automatic checkpoint of the state before the rollback: ${JSON.stringify(await checkpoints(replId))}`);
        await call('rollback-python-repl', { replId, checkpoint: left.id });
        assert.equal(await value(replId, 'x, y, open("f.txt").read()'), "(2, 'later', 'two')");
        await call('delete-python-repl', { replId });
      });

      it('automatic checkpoints undo the last instruction, and only the newest ones are kept', async () => {
        const replId = ((await call('create-python-repl', { engine })).structuredContent as { replId: string }).replId;
        await value(replId, 'total = 10');
        await eventually(
          async () => (await checkpoints(replId)).some((c) => c.auto && c.seq === 1),
          30_000,
          'an automatic checkpoint after the first instruction',
        );
        await value(replId, 'total = 0  # a mistake');
        const before = (await checkpoints(replId)).filter((c) => c.auto && c.seq === 1).at(-1)!;
        await call('rollback-python-repl', { replId, checkpoint: before.id });
        assert.equal(await value(replId, 'total'), '10');
        for (let i = 0; i < 12; i++) {
          await value(replId, `total += 1`);
          await server.manager.save(replId);
        }
        const autos = (await checkpoints(replId)).filter((c) => c.auto);
        assert.equal(autos.length, 10);
        assert.equal(await value(replId, 'total'), '22');
        // Back to the oldest kept, from a change not saved yet: saving that change as an automatic
        // checkpoint must not prune the one being rolled back to. The rollback comes while the
        // change runs, so that no save after a quiet time (100 ms here) comes between them, as it
        // could after a client's round trip; it interrupts what runs, which the change waits for.
        const change = 'try:\n    total = -1\n    print("changed", flush=True)\n    import time\n    time.sleep(60)\nexcept KeyboardInterrupt:\n    pass';
        const { seq } = await server.manager.exec(replId, change);
        let rollback: Promise<unknown> | undefined;
        const changed = await server.manager.follow(replId, seq, (chunk) => {
          if (chunk.data === 'changed') rollback ??= server.manager.rollback(replId, autos[0]!.id);
        });
        assert.ok(!('error' in changed), JSON.stringify(changed));
        await rollback;
        assert.equal(await value(replId, 'total'), '13');
        await call('delete-python-repl', { replId });
      });

      it('refuses what it cannot do, and leaves the machine and its checkpoints whole', async () => {
        const replId = ((await call('create-python-repl', { engine })).structuredContent as { replId: string }).replId;
        await value(replId, 'kept = [1, 2, 3]');
        await call('checkpoint-python-repl', { replId, label: 'good' });
        const unknown = await call('rollback-python-repl', { replId, checkpoint: 'nope' });
        assert.equal(unknown.isError, true);
        assert.match(textOf(unknown), new RegExp(`Machine ${replId} has no checkpoint "nope"`));
        const numeric = await call('checkpoint-python-repl', { replId, label: '42' }).then(textOf, (error: Error) => error.message);
        assert.match(numeric, /a checkpoint label cannot be a bare number/);
        const gone = await call('fork-python-repl', { replId: 'no-such-repl' });
        assert.equal(gone.isError, true);
        assert.match(textOf(gone), /does not exist/);
        assert.equal(await value(replId, 'kept'), '[1, 2, 3]');
        assert.deepEqual(
          (await checkpoints(replId)).filter((c) => !c.auto).map((c) => c.label),
          ['good'],
        );
        // Deleting a checkpoint over HTTP; an unknown one is a 404.
        const headers = { authorization: `Bearer ${server.token}` };
        const good = (await checkpoints(replId)).find((c) => c.label === 'good')!;
        assert.equal((await fetch(`${server.url}/v1/machine/${replId}/checkpoints/${good.id}`, { method: 'DELETE', headers })).status, 200);
        assert.equal((await fetch(`${server.url}/v1/machine/${replId}/checkpoints/${good.id}`, { method: 'DELETE', headers })).status, 404);
        assert.equal(await value(replId, 'kept'), '[1, 2, 3]');
        // An id is never given twice: the next checkpoint does not take the deleted one's.
        const next = ((await call('checkpoint-python-repl', { replId, label: 'next' })).structuredContent as { checkpoint: CheckpointInfo }).checkpoint;
        assert.ok(Number(next.id) > Number(good.id), `${next.id} after ${good.id}`);
        await call('delete-python-repl', { replId });
      });
    });
  }

  if (ENGINES_UNDER_TEST.includes('sandbox')) {
    it('sandbox: a generator half-way and the RNG continue identically in the origin and the fork (exact memory)', async () => {
      const origin = ((await call('create-python-repl', { engine: 'sandbox' })).structuredContent as { replId: string }).replId;
      await value(origin, 'import random\nrandom.seed(7)\nrandom.random()\ngen = (i * i for i in range(10))\nnext(gen), next(gen)');
      const fork = ((await call('fork-python-repl', { replId: origin })).structuredContent as { replId: string }).replId;
      const step = 'next(gen), next(gen), random.random()';
      assert.equal(await value(fork, step), await value(origin, step));
      await call('delete-python-repl', { replId: origin });
      await call('delete-python-repl', { replId: fork });
    });
  }

  for (const engine of ENGINES_UNDER_TEST) {
    it(`${engine} engine: a kill -9 while checkpoints are being taken loses none that was taken`, async () => {
      const { dir, cleanup: remove } = await tempDataDir();
      const host = spawn(process.execPath, ['--import', 'tsx', HOST, dir], { stdio: ['pipe', 'pipe', 'inherit'] });
      const lines: Array<Record<string, unknown>> = [];
      createInterface({ input: host.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
      const send = (command: object) => host.stdin!.write(JSON.stringify(command) + '\n');
      const taken = () => lines.filter((l) => l.checkpoint) as Array<{ checkpoint: CheckpointInfo; i: number }>;
      let name: string;
      try {
        await eventually(() => lines.some((l) => l.ready), 20_000, 'the host');
        send({ op: 'create', engine, python: TEST_PYTHON });
        await eventually(() => lines.some((l) => typeof l.created === 'string'), 60_000, 'a machine');
        name = lines.find((l) => typeof l.created === 'string')!.created as string;
        send({ op: 'churn', name });
        await eventually(() => taken().length >= 3, 120_000, 'three checkpoints');
      } finally {
        host.kill('SIGKILL');
        await new Promise((resolve) => host.once('exit', resolve));
      }
      const manager = await MachineManager.open({ dataDir: dir });
      try {
        const listed = await manager.checkpoints(name);
        for (const { checkpoint } of taken())
          assert.ok(
            listed.some((c) => c.id === checkpoint.id && c.label === checkpoint.label),
            `checkpoint ${checkpoint.label} is kept`,
          );
        const last = taken().at(-1)!;
        await manager.rollback(name, last.checkpoint.label!);
        const files = await manager.run(name, `import os\nsorted(f for f in os.listdir() if f.startswith("data"))`);
        assert.equal(
          valueOf(files.result),
          JSON.stringify(Array.from({ length: last.i + 1 }, (_, k) => `data${k}.bin`))
            .replaceAll('"', "'")
            .replaceAll(',', ', '),
        );
        // Every checkpoint a rollback can name is whole.
        for (const checkpoint of listed.filter((c) => c.label)) await manager.rollback(name, checkpoint.id);
      } finally {
        await manager.close();
        await remove();
      }
    });
  }

  if (ENGINES_UNDER_TEST.includes('sandbox')) {
    it('sandbox: a kill -9 after a checkpoint paused the machine, before the checkpoint is on disk, leaves the machine at its previous checkpoint, the loss named', async () => {
      const { dir, cleanup: remove } = await tempDataDir();
      // No automatic saves: the one save on disk is the checkpoint "before".
      const host = spawn(process.execPath, ['--import', 'tsx', HOST, dir, '600000'], { stdio: ['pipe', 'pipe', 'inherit'] });
      const lines: Array<Record<string, unknown>> = [];
      createInterface({ input: host.stdout! }).on('line', (line) => lines.push(JSON.parse(line)));
      const send = (...commands: object[]) => host.stdin!.write(commands.map((command) => JSON.stringify(command) + '\n').join(''));
      const finished = (seq: number) =>
        lines.some((l) => (l.event as { type?: string; seq?: number } | undefined)?.type === 'instruction' && (l.event as { seq: number }).seq === seq);
      const checkpoints = () => lines.filter((l) => l.checkpoint).map((l) => (l.checkpoint as CheckpointInfo).label);
      let name: string;
      try {
        await eventually(() => lines.some((l) => l.ready), 20_000, 'the host');
        send({ op: 'create', engine: 'sandbox' });
        await eventually(() => lines.some((l) => typeof l.created === 'string'), 60_000, 'a machine');
        name = lines.find((l) => typeof l.created === 'string')!.created as string;
        // 64 MiB of random bytes: its patch is made, sent and compressed for a good while after the pause.
        send({ op: 'exec', name, code: 'blob = __import__("os").urandom(64 << 20)\nx = 1' });
        await eventually(() => finished(0), 60_000, 'instruction 0');
        send({ op: 'checkpoint', name, label: 'before' });
        await eventually(() => checkpoints().includes('before'), 60_000, 'the checkpoint "before"');
        send({ op: 'exec', name, code: 'x = 2' });
        await eventually(() => finished(1), 60_000, 'instruction 1');
        // Instruction 2 waits for the checkpoint's pause, and runs while the checkpoint is written.
        send({ op: 'checkpoint', name, label: 'during' }, { op: 'exec', name, code: 'x = 3' });
        await eventually(() => finished(2), 60_000, 'instruction 2');
      } finally {
        host.kill('SIGKILL');
        await new Promise((resolve) => host.once('exit', resolve));
      }
      assert.deepEqual(checkpoints(), ['before'], 'the kill came before the checkpoint "during" was on disk');
      const manager = await MachineManager.open({ dataDir: dir });
      try {
        assert.deepEqual(
          (await manager.checkpoints(name)).filter((c) => c.label).map((c) => c.label),
          ['before'],
        );
        const back = await manager.run(name, 'x, len(blob)');
        assert.equal(valueOf(back.result), `(1, ${64 << 20})`);
        assert.match(
          back.result.data?.notices?.join('\n') ?? '',
          /The server stopped unexpectedly\. The machine goes back to its snapshot of .*\. Effects of instructions 1–2 are lost\./,
        );
      } finally {
        await manager.close();
        await remove();
      }
    });
  }

  it('hosted ForeverVM has no checkpoints: the client says so', async () => {
    const bare = await foreverVMOnlyProxy(server.url);
    const hosted = new HttpClient({ baseUrl: bare.url, token: server.token });
    try {
      const { name } = await hosted.create({ engine: 'python' });
      await assert.rejects(hosted.fork(name), /This backend cannot fork machines/);
      await assert.rejects(hosted.checkpoint(name), /This backend cannot take checkpoints/);
      await assert.rejects(hosted.rollback(name, '1'), /This backend cannot roll machines back/);
    } finally {
      await hosted.close();
      bare.close();
    }
  });
});
