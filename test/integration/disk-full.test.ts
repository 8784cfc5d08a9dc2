import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CheckpointInfo } from '../../src/shared/types.ts';
import { ENGINES_UNDER_TEST, TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';
import { textOf } from '../helpers/mcp-clients.ts';

/** The built CLI; `npm test` builds it first. */
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
/** The machines' disk: small enough to fill in a moment. */
const DISK_BYTES = 48 << 20;

/** Python that writes `fill` until the disk is full, then gives back `spare` bytes of it. */
const fillCode = (spare: number) => `import os
fd = os.open("fill", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
try:
    while True:
        os.write(fd, bytes(65536))
except OSError:
    pass
os.close(fd)
os.truncate("fill", max(0, os.path.getsize("fill") - ${spare}))`;

/**
 * A real server whose machines live on a disk that fills up (a tmpfs of its own, mounted by
 * bubblewrap): checkpoints, rollbacks and instructions get a clear error or notice, and the
 * machine, its files and its other checkpoints stay whole; once there is room, all works again.
 */
describe('a full disk', { timeout: 300_000 }, () => {
  let server: ChildProcess;
  let client: Client;
  let cleanup: () => Promise<void>;
  let filler: string;

  before(async () => {
    const data = await tempDataDir();
    cleanup = data.cleanup;
    const machines = join(data.dir, 'machines');
    await mkdir(machines);
    server = spawn(
      'bwrap',
      [
        '--dev-bind',
        '/',
        '/',
        '--size',
        String(DISK_BYTES),
        '--tmpfs',
        machines,
        '--die-with-parent',
        '--',
        process.execPath,
        CLI,
        '--data-dir',
        data.dir,
        'serve',
        '--port',
        '0',
      ],
      { env: { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    server.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await eventually(() => stderr.includes('listening on'), 60_000, `the server (${stderr})`);
    const { url, token } = JSON.parse(await readFile(join(data.dir, 'server.json'), 'utf8')) as { url: string; token: string };
    client = new Client({ name: 'perennial-tests', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    filler = await create('python');
  });
  after(async () => {
    await client?.close();
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    await cleanup();
  });

  const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
  async function create(engine: string): Promise<string> {
    const created = await call('create-python-repl', { engine });
    assert.equal(created.isError, undefined, textOf(created));
    return (created.structuredContent as { replId: string }).replId;
  }
  async function run(replId: string, pythonCode: string): Promise<{ value: string | null; notes: string[] }> {
    const result = await call('run-python-in-repl', { replId, pythonCode });
    const structured = result.structuredContent as { value: string | null; error: string | null; notes: string[] };
    assert.equal(structured.error, null, structured.error ?? '');
    return structured;
  }
  const value = async (replId: string, pythonCode: string) => (await run(replId, pythonCode)).value;
  const checkpoints = async (replId: string) =>
    ((await call('list-repl-checkpoints', { replId })).structuredContent as { checkpoints: CheckpointInfo[] }).checkpoints;

  for (const engine of ENGINES_UNDER_TEST) {
    it(`${engine} engine: a checkpoint or rollback that finds no room changes nothing, and says why`, async () => {
      const replId = await create(engine);
      await value(replId, 'import os\nkept = os.urandom(1 << 20)\nopen("small.txt", "w").write("small")');
      await call('checkpoint-python-repl', { replId, label: 'good' });
      const before = await checkpoints(replId);

      // Half a megabyte left: the history still fits, a 4 MiB state does not.
      await value(filler, fillCode(512 << 10));
      await value(replId, 'big = os.urandom(4 << 20)\nopen("small.txt", "w").write("changed")');
      const full = await call('checkpoint-python-repl', { replId, label: 'full' });
      assert.equal(full.isError, true);
      assert.match(textOf(full), new RegExp(`^Could not take a checkpoint of machine ${replId}: .*no space left on device.*Nothing was changed`, 'is'));
      const rolled = await call('rollback-python-repl', { replId, checkpoint: 'good' });
      assert.equal(rolled.isError, true);
      assert.match(textOf(rolled), /^Could not roll machine .* back: the state it would leave could not be saved first: .*no space left on device/is);
      assert.equal(await value(replId, 'len(kept), len(big), open("small.txt").read()'), "(1048576, 4194304, 'changed')");
      assert.deepEqual(await checkpoints(replId), before);

      // Not a byte left: an instruction still runs (it may be what frees space) and says it is not in the history.
      await value(filler, fillCode(0));
      const unrecorded = await run(replId, `${'#'.repeat(16_384)}\nlen(big)`);
      assert.equal(unrecorded.value, '4194304');
      assert.ok(
        unrecorded.notes.some((note) => /not in the machine's history: .*no space left on device/is.test(note)),
        JSON.stringify(unrecorded.notes),
      );

      // Room again: everything works, and every checkpoint taken before is whole.
      await value(filler, 'os.remove("fill")');
      const after = await call('checkpoint-python-repl', { replId, label: 'after' });
      assert.equal(after.isError, undefined, textOf(after));
      await call('rollback-python-repl', { replId, checkpoint: 'good' });
      assert.equal(await value(replId, '"big" in globals(), len(kept), open("small.txt").read()'), "(False, 1048576, 'small')");
      await call('rollback-python-repl', { replId, checkpoint: 'after' });
      assert.equal(await value(replId, 'len(big), open("small.txt").read()'), "(4194304, 'changed')");
      await call('delete-python-repl', { replId });
    });
  }
});
