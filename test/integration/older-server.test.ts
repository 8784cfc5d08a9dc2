import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { readServerInfo } from '../../src/platform/server-info.ts';
import { isProcessAlive } from '../../src/platform/process-liveness.ts';
import { VERSION } from '../../src/shared/version.ts';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';
import { finished, type CliRun } from '../helpers/processes.ts';

/** Today's built CLI, and the CLI of an earlier build (scripts/make-fixture.sh build). */
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const OLD = new URL('../fixtures/builds/bc367fb/', import.meta.url);
const OLD_CLI = fileURLToPath(new URL('dist/cli.js', OLD));
const OLD_COMMIT = readFileSync(new URL('COMMIT', OLD), 'utf8').trim().slice(0, 7);

function perennial(cli: string, dataDir: string, args: string[]): Promise<CliRun> {
  return finished(
    spawn(process.execPath, [cli, '--data-dir', dataDir, ...args], {
      env: { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

async function stop(dataDir: string): Promise<void> {
  const info = await readServerInfo(dataDir);
  if (!info || !isProcessAlive(info.pid)) return;
  process.kill(info.pid, 'SIGTERM');
  await eventually(() => !isProcessAlive(info.pid), 60_000, 'the server to stop');
}

/**
 * An updated client meets a server of an earlier build (0.1.0, the real bundle of bc367fb) that
 * owns the data dir: it replaces a background server, which saves every machine as it stops, and
 * refuses a server a person started, saying what runs, what it needs and how to restart it.
 */
describe(`today's client and a server of Perennial 0.1.0 (${OLD_COMMIT})`, { timeout: 240_000 }, () => {
  let dataDir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir());
  });
  after(async () => {
    await stop(dataDir);
    await cleanup();
  });

  it("replaces the older background server: it saves every machine, today's owns the data dir, and the state is whole", async () => {
    // The old CLI starts its own background server, as it did for a user before the update.
    const made = await perennial(OLD_CLI, dataDir, [
      'exec',
      '--engine',
      'python',
      'x = 41\nclass Point:\n    def __init__(self, x):\n        self.x = x\np = Point(x)',
    ]);
    assert.equal(made.code, 0, made.stderr);
    const name = /machine: (\S+)/.exec(made.stderr)?.[1];
    assert.ok(name, made.stderr);
    // Not saved yet when the new client arrives: the old server must save it as it stops.
    assert.equal((await perennial(OLD_CLI, dataDir, ['exec', '-m', name, 'y = x + 1'])).code, 0);
    const old = (await readServerInfo(dataDir))!;
    assert.equal(old.version, '0.1.0');

    const resumed = await perennial(CLI, dataDir, ['exec', '-m', name, 'x, y, p.x, type(p).__name__']);
    assert.equal(resumed.stderr, '');
    assert.equal(resumed.stdout, "(41, 42, 41, 'Point')\n");
    assert.equal(isProcessAlive(old.pid), false, 'the old server has stopped');
    const now = (await readServerInfo(dataDir))!;
    assert.equal(now.version, VERSION);
    assert.equal(now.background, true);
    assert.notEqual(now.pid, old.pid);
    await stop(dataDir);
  });

  it('refuses an older server a person started, leaves it running, and says how to restart it', async () => {
    const server = spawn(process.execPath, [OLD_CLI, '--data-dir', dataDir, 'serve'], { stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      await eventually(async () => (await readServerInfo(dataDir))?.pid === server.pid, 30_000, 'the hand-started server');
      const refused = await perennial(CLI, dataDir, ['machine', 'list']);
      assert.equal(refused.code, 1);
      assert.match(
        refused.stderr,
        new RegExp(
          `The Perennial server of .* \\(pid ${server.pid}, http://127\\.0\\.0\\.1:\\d+\\) is version 0\\.1\\.0, and this perennial \\(${VERSION.replace(/\./g, '\\.')}\\) needs ${VERSION.split('.').slice(0, 2).join('\\.')} or newer\\. ` +
            `It was started by hand, so it is left running: stop it \\(Ctrl-C where it runs, or kill ${server.pid}; it saves every machine\\) and start it again with this version: perennial serve --data-dir `,
        ),
      );
      assert.ok(isProcessAlive(server.pid!), 'left running');
    } finally {
      server.kill('SIGTERM');
      await eventually(() => !isProcessAlive(server.pid!), 60_000, 'the hand-started server to stop');
    }
  });
});
