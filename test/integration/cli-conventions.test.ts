import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';
import { TerminalSession, finished, type CliRun } from '../helpers/processes.ts';

/** The built CLI; `npm test` builds it first. */
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const ENV = { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON };

/**
 * The CLI as people who know Python's REPL, IPython and Jupyter expect it (issue 25): time limits
 * that fit the surface, a REPL that leaves on exit() and takes a pasted block whole.
 */
describe('perennial as a Python user expects it', { timeout: 180_000 }, () => {
  let dataDir: string;
  let cleanup: () => Promise<void>;
  let server: ChildProcess;

  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir({ empty: true }));
    // The server a person started, with a short default for instructions sent without a timeout.
    server = spawn(process.execPath, [CLI, '--data-dir', dataDir, 'serve', '--engine', 'python', '--timeout', '1'], { env: ENV, stdio: 'ignore' });
    await eventually(() => existsSync(join(dataDir, 'server.json')), 30_000, 'the server');
  });
  after(async () => {
    server.kill('SIGTERM');
    await new Promise((resolve) => server.once('exit', resolve));
    await cleanup();
  });

  const cli = (args: string[], stdin = ''): Promise<CliRun> => {
    const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, ...args], { env: ENV, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin!.end(stdin);
    return finished(child);
  };
  const repl = (...args: string[]) => new TerminalSession([process.execPath, CLI, '--data-dir', dataDir, 'repl', ...args], ENV);
  const shows = (terminal: TerminalSession, what: string | RegExp, description: string) =>
    eventually(() => (typeof what === 'string' ? terminal.screen.includes(what) : what.test(terminal.screen)), 30_000, description);

  // Longer than the server's default of 1 s: a timeout would stop it first.
  const SLOW = 'import time\ntime.sleep(1.5)\n"slept"';

  it('exec: --timeout 0 is no limit; a timed-out instruction says how to give it longer', async () => {
    const stopped = await cli(['exec', SLOW]);
    assert.equal(stopped.code, 1);
    assert.match(stopped.stderr, /Timed out after 1 s: the instruction was interrupted/);
    assert.match(stopped.stderr, /perennial: give it longer with --timeout SECONDS \(0: no limit\)/);
    const unlimited = await cli(['exec', '--timeout', '0', SLOW]);
    assert.equal(unlimited.code, 0, unlimited.stderr);
    assert.equal(unlimited.stdout, "'slept'\n");
    const refused = await cli(['exec', '--timeout', '-1', '1']);
    assert.match(refused.stderr, /expected a number of seconds, or 0 for no limit, got "-1"/);
  });

  it('repl: no time limit, as in Python; the banner names the engine and its Python', async () => {
    const terminal = repl();
    try {
      await shows(terminal, '>>> ', 'the prompt');
      assert.match(terminal.screen, /Perennial REPL on machine \S+: python engine, Python \d+\.\d+\.\d+\. Ctrl-C interrupts; exit\(\) or Ctrl-D leaves/);
      terminal.type('import time; time.sleep(1.5); print("slept through")\r');
      await shows(terminal, /slept through\r\n[\s\S]*>>> $/, 'the statement to finish');
      assert.doesNotMatch(terminal.screen, /Timed out/);
    } finally {
      terminal.close();
    }
  });

  it('repl: a pasted block with blank lines inside a function runs whole', async () => {
    const terminal = repl();
    try {
      await shows(terminal, '>>> ', 'the prompt');
      // As a terminal in bracketed paste mode sends a paste.
      terminal.type('\x1b[200~def area(w, h):\r    base = w * h\r\r    return base\r\rprint(area(6, 7))\r\x1b[201~');
      await shows(terminal, /\r\n42\r\n/, 'the pasted block run');
      assert.doesNotMatch(terminal.screen, /IndentationError|SyntaxError/);
    } finally {
      terminal.close();
    }
  });

  for (const [leave, status] of [
    ['exit()', 0],
    ['quit(3)', 3],
    ['import sys; sys.exit("bye")', 1],
  ] as const) {
    it(`repl: ${leave} leaves with status ${status}, and the machine stays`, async () => {
      const terminal = repl();
      await shows(terminal, '>>> ', 'the prompt');
      const machine = /on machine (\S+):/.exec(terminal.screen)![1]!;
      terminal.type('kept = "still here"\r');
      await eventually(() => terminal.screen.split('>>> ').length > 2, 30_000, 'the next prompt');
      terminal.type(`${leave}\r`);
      assert.equal(await terminal.exited, status);
      assert.doesNotMatch(terminal.screen, /Traceback|SystemExit/);
      if (status === 1) assert.match(terminal.screen, /\r\nbye\r\n/);
      assert.equal((await cli(['exec', '-m', machine, 'kept'])).stdout, "'still here'\n");
    });
  }

  it('repl NAME of a machine that does not exist says so at once, before any prompt', async () => {
    const r = await cli(['repl', 'no-such-machine']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^perennial: Machine no-such-machine does not exist/);
    assert.doesNotMatch(r.stdout + r.stderr, />>> /);
  });
});
