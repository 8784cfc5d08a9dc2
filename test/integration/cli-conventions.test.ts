import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { TEST_PYTHON, eventually, otherPython, tempDataDir } from '../helpers/machines.ts';
import { TerminalSession, finished, type CliRun } from '../helpers/processes.ts';

/** The built CLI; `npm test` builds it first. */
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const ENV = { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON };

/**
 * The CLI as people who know Python's REPL, IPython and Jupyter expect it (issue 25): time limits
 * that fit the surface, a REPL that leaves on exit() and takes a pasted block whole.
 */
describe('perennial as a Python user expects it', { timeout: 360_000 }, () => {
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
      assert.ok(terminal.screen.includes(`come back with: perennial repl ${machine}`), terminal.screen);
      assert.equal((await cli(['exec', '-m', machine, 'kept'])).stdout, "'still here'\n");
    });
  }

  it('repl: a figure is saved where it can be opened, and its path printed', async () => {
    const terminal = repl();
    try {
      await shows(terminal, '>>> ', 'the prompt');
      const machine = /on machine (\S+):/.exec(terminal.screen)![1]!;
      terminal.type('import matplotlib; matplotlib.use("Agg"); import matplotlib.pyplot as plt; plt.plot([1, 2]); plt.show()\r');
      await shows(terminal, /figure saved to (\S+\.png)/, 'the figure saved');
      const path = /figure saved to (\S+\.png)/.exec(terminal.screen)![1]!;
      assert.equal(path, join(tmpdir(), 'perennial-figures', machine, 'figure-0-1.png'));
      assert.deepEqual([...readFileSync(path).subarray(1, 4)], [...Buffer.from('PNG')]);
    } finally {
      terminal.close();
    }
  });

  it('new machines get readable names or the one given; a mistyped name gets the nearest, and where to see them all', async () => {
    const made = (await cli(['machine', 'new'])).stdout.trim();
    assert.match(made, /^[a-z]+-[a-z]+$/);
    const named = await cli(['machine', 'new', '--name', 'data-cleaning']);
    assert.equal(named.stdout, 'data-cleaning\n', named.stderr);
    const again = await cli(['machine', 'new', '--name', 'data-cleaning']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /^perennial: A machine named data-cleaning already exists; choose another name/);
    const option = await cli(['machine', 'new', '--name', '-rf']);
    assert.equal(option.code, 1);
    assert.match(option.stderr, /a machine name starts with a letter or digit/);
    const typo = await cli(['exec', '-m', 'data-claening', '1']);
    assert.equal(typo.code, 1);
    assert.equal(
      typo.stderr,
      'perennial: Machine data-claening does not exist (it may have been deleted). Did you mean data-cleaning? (perennial machine list shows every machine)\n',
    );
    // A deleted machine's name is not given to a new one: whoever still holds it is told it is gone.
    await cli(['machine', 'rm', '--force', made]);
    const retired = JSON.parse(readFileSync(join(dataDir, 'machines', '.retired-names.json'), 'utf8')) as { version: number; names: string[] };
    assert.equal(retired.version, 1);
    assert.ok(retired.names.includes(made), retired.names.join(', '));
  });

  it('repl NAME of a machine that does not exist says so at once, before any prompt', async () => {
    const r = await cli(['repl', 'no-such-machine']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^perennial: Machine no-such-machine does not exist/);
    assert.doesNotMatch(r.stdout + r.stderr, />>> /);
  });
});

/** Runs the CLI with `args` (and no stdin); `env` replaces the tests' environment. */
const run = (args: string[], env: NodeJS.ProcessEnv = ENV): Promise<CliRun> =>
  finished(spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));

/**
 * A data dir for one describe block, empty at its start, whose server (one a command started, or
 * one a test left) is stopped at its end; `cli` runs commands on it.
 */
function dataDirForBlock(): { readonly dir: string; cli(args: string[], env?: NodeJS.ProcessEnv): Promise<CliRun> } {
  let dir = '';
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dir, cleanup } = await tempDataDir({ empty: true }));
  });
  after(async () => {
    await run(['--data-dir', dir, 'stop']);
    await cleanup();
  });
  return {
    get dir() {
      return dir;
    },
    cli: (args, env) => run(['--data-dir', dir, ...args], env),
  };
}

describe("the local server, visible and under the user's control", { timeout: 360_000 }, () => {
  const block = dataDirForBlock();
  const cli = block.cli;
  /** A `perennial serve` a person started, once it listens; its banner so far. */
  const serve = async (...args: string[]) => {
    const child = spawn(process.execPath, [CLI, '--data-dir', block.dir, 'serve', '--engine', 'python', ...args], {
      env: ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let banner = '';
    child.stderr!.on('data', (d: Buffer) => (banner += d));
    const stopped = finished(child);
    let exited = false;
    void stopped.then(() => (exited = true));
    await eventually(() => banner.includes('ForeverVM clients:') || exited, 30_000, 'the server to listen');
    return { child, banner: () => banner, stopped };
  };

  it('stop: stops the server a command started, which saves every machine; the next command starts one again', async () => {
    const made = await cli(['exec', '--engine', 'python', 'kept = 42']);
    const name = /^machine: (\S+)$/m.exec(made.stderr)![1]!;
    const pid = JSON.parse(readFileSync(join(block.dir, 'server.json'), 'utf8')).pid as number;
    const stopped = await cli(['stop']);
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(
      stopped.stderr,
      new RegExp(`^Stopped the Perennial server of ${block.dir} \\(pid ${pid}, http://127\\.0\\.0\\.1:\\d+\\); its machines are saved`),
    );
    assert.equal(existsSync(join(block.dir, 'server.json')), false);
    assert.throws(() => process.kill(pid, 0), 'the server process is gone');
    assert.match((await cli(['stop'])).stderr, new RegExp(`^No Perennial server runs on ${block.dir}\\.`));
    assert.equal((await cli(['exec', '-m', name, 'kept'])).stdout, '42\n', 'the machine was saved');
  });

  it('serve: takes over from a server a command started; names a server a person started and how to stop it', async () => {
    await cli(['exec', '1']);
    const background = JSON.parse(readFileSync(join(block.dir, 'server.json'), 'utf8')) as { pid: number };
    // Another background server, as a second client starts at the same moment, leaves the first be.
    const racing = await cli(['serve', '--exit-when-idle', '900']);
    assert.equal(racing.code, 1);
    assert.equal(JSON.parse(readFileSync(join(block.dir, 'server.json'), 'utf8')).pid, background.pid, 'the first background server still serves');
    const first = await serve('--port', '0');
    assert.match(first.banner(), new RegExp(`perennial: took over from the server a command had started in the background \\(pid ${background.pid}\\)`));
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(first.banner())![1]!;
    assert.notEqual(JSON.parse(readFileSync(join(block.dir, 'server.json'), 'utf8')).pid, background.pid);

    const second = await serve();
    const refused = await second.stopped;
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, new RegExp(`A Perennial server already serves ${block.dir}: pid ${first.child.pid}, at ${url} \\(MCP: ${url}/mcp\\)`));
    assert.match(refused.stderr, new RegExp(`stop it with: perennial stop --data-dir ${block.dir}`));
    assert.match((await cli(['stop'])).stderr, /^Stopped the Perennial server/);
    assert.equal((await first.stopped).code, 0, 'the server stopped as if by Ctrl-C');
  });

  it("serve's takeover is one step: a client that starts its own server meanwhile finds the data dir taken, and uses serve's", async () => {
    await cli(['exec', '1']);
    // Read as it comes and goes: the file may be removed between a check and the read.
    const info = () => {
      try {
        return JSON.parse(readFileSync(join(block.dir, 'server.json'), 'utf8')) as { pid: number };
      } catch {
        return null;
      }
    };
    const background = info()!;
    // The moment the background server has gone, a client comes that finds no server and starts one.
    let client: Promise<CliRun> | undefined;
    const watching = setInterval(() => {
      if (!client && info()?.pid !== background.pid) client = cli(['machine', 'list']);
    }, 2);
    try {
      const person = await serve();
      assert.match(person.banner(), /took over from the server a command had started/);
      assert.doesNotMatch(person.banner(), /in use by process/);
      assert.match(person.banner(), /listening on/);
      await eventually(() => client !== undefined, 30_000, 'the client that came meanwhile');
      assert.equal((await client!).code, 0, (await client!).stderr);
      assert.equal(info()?.pid, person.child.pid, "the person's server serves the data dir");
      assert.match((await cli(['stop'])).stderr, /^Stopped the Perennial server/);
      assert.equal((await person.stopped).code, 0);
    } finally {
      clearInterval(watching);
    }
  });

  it('serve: the banner says how to connect, and its client line works as printed', async () => {
    const server = await serve('--port', '0');
    try {
      const banner = server.banner();
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)![1]!;
      assert.match(banner, new RegExp(`MCP: ${url}/mcp \\(streamable HTTP\\) or ${url}/sse \\(legacy SSE\\)`));
      assert.match(banner, /The port changes at each start; --port keeps one\./);
      const tokenFile = new RegExp(`claude mcp add --transport http perennial ${url}/mcp --header "Authorization: Bearer \\$\\(cat (\\S+)\\)"`).exec(
        banner,
      )![1]!;
      const token = readFileSync(tokenFile, 'utf8').trim();
      const initialize = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'banner', version: '1' } },
      };
      const answer = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(initialize),
      });
      assert.equal(answer.status, 200, await answer.text());
    } finally {
      server.child.kill('SIGINT');
      await server.stopped;
    }
  });

  it("a command's PERENNIAL_PYTHON or --python makes the machine it creates, whatever the running server was started with", async () => {
    await cli(['exec', '1']);
    const { dir: venv, python } = otherPython();
    // The machine runs in its own environment, which sees the packages of the interpreter it was made from.
    const sees = `import sys; any(p.startswith(${JSON.stringify(venv)}) for p in sys.path)`;
    const fromEnv = await cli(['exec', '--engine', 'python', sees], { ...ENV, PERENNIAL_PYTHON: python });
    assert.equal(fromEnv.stdout, 'True\n', fromEnv.stderr);
    const fromFlag = await cli(['exec', '--engine', 'python', '--python', python, sees]);
    assert.equal(fromFlag.stdout, 'True\n', fromFlag.stderr);
    const plain = await cli(['exec', '--engine', 'python', sees]);
    assert.equal(plain.stdout, 'False\n', "the server's own default otherwise");
    // That venv was made without the system's packages: the machine's environment is too.
    const isolated = await cli(['exec', '--engine', 'python', '--python', python, 'import numpy']);
    assert.match(isolated.stderr, /ModuleNotFoundError: No module named 'numpy'/);
    assert.equal((await cli(['exec', '--engine', 'python', 'import numpy'])).code, 0, 'the test interpreter has numpy');
  });
});

describe('errors a person can act on', { timeout: 360_000 }, () => {
  const block = dataDirForBlock();
  const cli = block.cli;

  it('a data dir that cannot be used: one line that names it and the way out, for every command', async () => {
    for (const args of [
      ['--data-dir', '/proc/perennial-x', 'exec', '1'],
      ['--data-dir', '/proc/perennial-x', 'serve'],
    ]) {
      const r = await run(args);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr,
        'perennial: The data dir /proc/perennial-x cannot be used: no folder can be made at /proc/perennial-x. Choose another with --data-dir DIR or PERENNIAL_HOME\n',
      );
    }
    const file = join(block.dir, 'a-file');
    writeFileSync(file, 'not a folder');
    const r = await run(['--data-dir', join(file, 'machines'), 'machine', 'list']);
    assert.equal(
      r.stderr,
      `perennial: The data dir ${join(file, 'machines')} cannot be used: ${file} is a file, not a folder. Choose another with --data-dir DIR or PERENNIAL_HOME\n`,
    );
  });

  it('a bad PERENNIAL_ENGINE for the server a command starts: its reason, once', async () => {
    const { dir, cleanup: remove } = await tempDataDir({ empty: true });
    try {
      const r = await run(['--data-dir', dir, 'exec', '1'], { ...ENV, PERENNIAL_ENGINE: 'bogus' });
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        new RegExp(
          `^perennial: The Perennial server could not start on ${dir}: option '--engine <engine>' value 'bogus' from env 'PERENNIAL_ENGINE' is invalid\\. Allowed choices are sandbox, python\\.`,
        ),
      );
      const log = readFileSync(join(dir, 'server.log'), 'utf8');
      assert.equal(log.split("value 'bogus'").length, 2, 'the server was started once, not again and again');
    } finally {
      await remove();
    }
  });

  it('a busy port: which, and what to do', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const r = await cli(['serve', '--port', String(port)]);
      assert.equal(r.code, 1);
      assert.equal(r.stderr, `perennial: Port ${port} on 127.0.0.1 is in use by another program; choose another with --port, or --port 0 for any free port\n`);
    } finally {
      taken.close();
    }
  });

  it("an instruction the server refuses: the server's reason", async () => {
    const r = await cli(['exec', '--timeout', '100000', '1']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /perennial: The server refused the instruction: .*a timeout is at most 86400 seconds \(a day\); 0 is no limit/);
  });

  it('machine rm keeps a busy machine without --force; with it, the running exec is told', async () => {
    const made = await cli(['machine', 'new', '--engine', 'python']);
    const name = made.stdout.trim();
    const running = spawn(
      process.execPath,
      [CLI, '--data-dir', block.dir, 'exec', '-m', name, '--timeout', '0', 'print("started", flush=True)\nimport time\ntime.sleep(3600)'],
      {
        env: ENV,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const ran = finished(running);
    let out = '';
    running.stdout!.on('data', (d: Buffer) => (out += d));
    await eventually(() => out.includes('started'), 30_000, 'the instruction to run');
    const kept = await cli(['machine', 'rm', name]);
    assert.equal(kept.code, 1);
    assert.match(
      kept.stderr,
      new RegExp(
        `^perennial: ${name}: running an instruction, so not removed: interrupt it first \\(Ctrl-C where it runs\\), or remove it anyway with: perennial machine rm --force ${name}`,
      ),
    );
    assert.match((await cli(['machine', 'list'])).stdout, new RegExp(name));
    const removed = await cli(['machine', 'rm', '--force', name]);
    assert.equal(removed.code, 0, removed.stderr);
    const told = await ran;
    assert.equal(told.code, 1);
    assert.match(told.stderr, /The machine was deleted while this instruction ran: it stopped, and nothing of the machine is kept\./);
    assert.doesNotMatch((await cli(['machine', 'list'])).stdout, new RegExp(name));
  });

  it('exec of output cut at the cap exits 3 and says so, so a redirected file is never taken for whole', async () => {
    const r = await cli(['exec', '--engine', 'python', 'print("x" * 1100000)']);
    assert.equal(r.code, 3);
    assert.match(r.stderr, /perennial: the output was cut at 1048576 bytes, so what was printed is incomplete \(exit status 3\)/);
    const whole = await cli(['exec', '--engine', 'python', 'print("x" * 1000)']);
    assert.equal(whole.code, 0);
  });
});
