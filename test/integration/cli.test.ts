import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { cpSync, existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { TEST_CLUSTER_VARIABLE } from '../helpers/test-cluster.ts';
import { fileURLToPath } from 'node:url';
import { runningServer } from '../../src/client/local-server-connection.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';
import { TerminalSession, finished, type CliRun } from '../helpers/processes.ts';

/** The built CLI; `npm test` builds it first. */
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** Stops the server a command started on `dir` (clients start one when none runs). */
async function stopServer(dir: string): Promise<void> {
  const info = await runningServer(dir);
  if (!info) return;
  process.kill(info.pid, 'SIGTERM');
  await eventually(() => !existsSync(join(dir, 'server.json')), 20_000, 'the server to stop');
}

describe('perennial CLI (built, through the local server it starts)', { timeout: 420_000 }, () => {
  let dataDir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir());
  });
  after(async () => {
    await stopServer(dataDir);
    await cleanup();
  });

  /** The CLI on the data dir, named as a person in its parent folder names it: a relative path. */
  function start(args: string[]): ChildProcess {
    return spawn(process.execPath, [CLI, '--data-dir', basename(dataDir), ...args], {
      cwd: dirname(dataDir),
      env: { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  }

  function cli(args: string[], stdin = ''): Promise<CliRun> {
    const child = start(args);
    child.stdin!.end(stdin);
    return finished(child);
  }

  /** The CLI with extra environment (HOME for the ForeverVM config), outside the test data dir. */
  function cliWith(env: Record<string, string>, args: string[], stdin = ''): Promise<CliRun> {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin!.end(stdin);
    return finished(child);
  }

  it('exec starts the server, creates a machine, names it on stderr, streams output and prints the value', async () => {
    const r = await cli(['exec', 'x = 41\nprint("hello")\nx + 1']);
    assert.ok(existsSync(join(dataDir, 'server.json')), 'a server was started for the data dir');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'hello\n42\n');
    const name = /^machine: (\S+)$/m.exec(r.stderr)?.[1];
    assert.ok(name, r.stderr);
    const again = await cli(['exec', '--machine', name, 'x']);
    assert.equal(again.stdout, '41\n', 'state is kept between CLI runs');
  });

  it('exec exits 1 with the traceback on stderr for a Python error', async () => {
    const r = await cli(['exec', '1/0']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /ZeroDivisionError: division by zero/);
    assert.equal(r.stdout, '');
  });

  it("exec answers the cell's input() from stdin, the question on stderr; with the code on stdin there is no answer", async () => {
    const r = await cli(['exec', '--engine', 'python', 'who = input("Name? ")\nprint("hi", who)'], 'Ada\n');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'hi Ada\n', 'the question and answer are not repeated on stdout');
    assert.match(r.stderr, /Name\? /);
    const piped = await cli(['exec', '--engine', 'python', '-'], 'input("Name? ")\n');
    assert.equal(piped.code, 1);
    assert.match(piped.stderr, /EOFError: input\(\) has no answer: the client that sent this cell cannot answer questions/);
  });

  it('exec reads code from stdin with -, and honours --timeout', async () => {
    const r = await cli(['exec', '-'], 'import sys\nprint("to stderr", file=sys.stderr)\n"from stdin"\n');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "'from stdin'\n");
    assert.match(r.stderr, /to stderr/);
    const slow = await cli(['exec', '--timeout', '1', 'import time; time.sleep(20)']);
    assert.equal(slow.code, 1);
    assert.match(slow.stderr, /Timed out after 1 s/);
  });

  it('machine new / list / swap / rm', async () => {
    const created = await cli(['machine', 'new', '--tag', 'team=cli', '--tag', 'env=test', '--memory-mb', '512']);
    assert.equal(created.code, 0, created.stderr);
    const name = created.stdout.trim();
    assert.match(name, /^[a-z]+-[a-z]+(-\d+)?$/);
    await cli(['exec', '-m', name, 'y = 2\nf = open("open.txt", "w")']);
    const swapped = await cli(['machine', 'swap', name]);
    assert.equal(swapped.code, 0, swapped.stderr);
    const json = JSON.parse((await cli(['machine', 'list', '--tag', 'team=cli', '--json'])).stdout) as Array<Record<string, unknown>>;
    assert.equal(json.length, 1);
    assert.deepEqual(
      { name: json[0]!.name, tags: json[0]!.tags, memoryMb: json[0]!.memoryMb, state: json[0]!.state, nextSeq: json[0]!.nextSeq },
      { name, tags: { team: 'cli', env: 'test' }, memoryMb: 512, state: 'swapped', nextSeq: 1 },
    );
    const table = (await cli(['machine', 'list'])).stdout;
    // A cluster's node (the suite run again by test/cluster-suites.ts) says which node runs each machine.
    const node = process.env[TEST_CLUSTER_VARIABLE] ? 'NODE\\s+' : '';
    assert.match(table, new RegExp(`^NAME\\s+ENGINE\\s+RUNTIME\\s+STATE\\s+INSTRUCTIONS\\s+${node}CREATED\\s+TAGS$`, 'm'));
    assert.match(
      table,
      new RegExp(`^${name}\\s+sandbox\\s+Pyodide 314\\.0\\.7 \\(Python 3\\.14\\.2\\)\\s+swapped\\s+1\\s+.*team=cli,env=test$`, 'm'),
      'the sandbox is the default engine',
    );
    assert.equal((await cli(['machine', 'list', '--tag', 'team=none'])).stdout, '');
    const resumed = await cli(['exec', '-m', name, 'y']);
    assert.equal(resumed.stdout, '2\n');
    assert.match(resumed.stderr, /^perennial: Not kept across the swap: f \(open file 'open.txt'/m, 'a loss is said on stderr');
    assert.equal((await cli(['machine', 'rm', name])).code, 0);
    const gone = await cli(['exec', '-m', name, 'y']);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, new RegExp(`Machine ${name} was deleted; no other machine is given its name`));
  });

  it('machine fork, checkpoint, checkpoints, rollback', async () => {
    const name = (await cli(['machine', 'new', '--engine', 'python'])).stdout.trim();
    await cli(['exec', '-m', name, 'v = "first"']);
    const taken = await cli(['checkpoint', name, '--label', 'first']);
    assert.equal(taken.code, 0, taken.stderr);
    const id = taken.stdout.trim();
    assert.match(id, /^\d+$/);
    await cli(['exec', '-m', name, 'v = "second"']);
    const fork = (await cli(['machine', 'fork', name, '--tag', 'try=1'])).stdout.trim();
    assert.match(fork, /^[a-z]+-[a-z]+(-\d+)?$/);
    const listed = (await cli(['checkpoints', name])).stdout;
    assert.match(listed, /^ID\s+LABEL\s+BEFORE\s+TAKEN\s+SIZE\s+KIND$/m);
    assert.match(listed, new RegExp(`^${id}\\s+first\\s+#1\\s+\\S+ \\S+\\s+[\\d.]+ KiB\\s+taken$`, 'm'));
    const rolled = await cli(['rollback', name, 'first']);
    assert.equal(rolled.code, 0, rolled.stderr);
    assert.match(rolled.stderr, new RegExp(`^${name} is back at checkpoint ${id} \\("first"\\), taken before instruction 1`));
    assert.equal((await cli(['exec', '-m', name, 'v'])).stdout, "'first'\n");
    assert.equal((await cli(['exec', '-m', fork, 'v'])).stdout, "'second'\n");
    const unknown = await cli(['rollback', name, 'nothing']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, new RegExp(`Machine ${name} has no checkpoint "nothing"`));
    await cli(['machine', 'rm', name, fork]);
  });

  it('rejects bad arguments with a clear message', async () => {
    const badEngine = await cli(['machine', 'new', '--engine', 'bogus']);
    assert.equal(badEngine.code, 1);
    assert.match(badEngine.stderr, /Allowed choices are sandbox, python/);
    const badTag = await cli(['machine', 'new', '--tag', 'novalue']);
    assert.match(badTag.stderr, /expected key=value/);
    const badTimeout = await cli(['exec', '--timeout', '-1', '1']);
    assert.match(badTimeout.stderr, /expected a number of seconds, or 0 for no limit/);
    const badPort = await cli(['serve', '--port', '70000']);
    assert.match(badPort.stderr, /expected a port from 0 \(any free port\) to 65535/);
    const badDefault = await cliWith({ PERENNIAL_ENGINE: 'bogus' }, ['--data-dir', dataDir, 'serve']);
    assert.equal(badDefault.code, 1);
    assert.match(badDefault.stderr, /value 'bogus' from env 'PERENNIAL_ENGINE' is invalid\. Allowed choices are sandbox, python/);
  });

  it('serve: runs the local server until Ctrl-C (any free port with --port 0, PERENNIAL_ENGINE for machines made without an engine, swapping idle machines after --idle-seconds), then saves its machines and removes server.json', async () => {
    const { dir, cleanup } = await tempDataDir();
    try {
      // A PATH without the perennial command, as on a fresh clone after npm start.
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: '/usr/bin:/bin', PERENNIAL_PYTHON: TEST_PYTHON, PERENNIAL_ENGINE: 'python' };
      delete env.MALLOC_MMAP_THRESHOLD_;
      const child = spawn(process.execPath, [CLI, '--data-dir', dir, 'serve', '--port', '0', '--idle-seconds', '1'], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const done = finished(child);
      const infoPath = join(dir, 'server.json');
      await eventually(() => existsSync(infoPath), 20_000, 'server.json');
      const info = JSON.parse(readFileSync(infoPath, 'utf8')) as { url: string; token: string; pid: number };
      assert.equal(info.pid, child.pid);
      // It gives freed memory back as a server a client starts does, where it can start over in place.
      if ('execve' in process && existsSync(`/proc/${info.pid}/environ`))
        assert.match(readFileSync(`/proc/${info.pid}/environ`, 'utf8'), /(^|\0)MALLOC_MMAP_THRESHOLD_=8192\0/);
      const headers = { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' };
      // As a ForeverVM client creates machines: without an engine.
      const name = ((await (await fetch(`${info.url}/v1/machine/new`, { method: 'POST', headers, body: '{}' })).json()) as { machine_name: string })
        .machine_name;
      assert.equal(((await (await fetch(`${info.url}/v1/machine/${name}`, { headers })).json()) as { engine: string }).engine, 'python');
      await fetch(`${info.url}/v1/machine/${name}/exec`, { method: 'POST', headers, body: JSON.stringify({ instruction: { code: 'kept = "served"' } }) });
      await fetch(`${info.url}/v1/machine/${name}/exec/0/result`, { headers });
      const state = async () => ((await (await fetch(`${info.url}/v1/machine/${name}`, { headers })).json()) as { state: string }).state;
      await eventually(async () => (await state()) === 'swapped', 15_000, 'the idle machine to be swapped out after 1 s');
      child.kill('SIGINT');
      const r = await done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /Perennial server listening on http:\/\/127\.0\.0\.1:\d+ \(data dir .*; new machines: python\)/);
      assert.ok(
        r.stderr.includes(
          `No perennial command on your PATH yet: npm link in ${dirname(dirname(CLI))} puts it there; then, in another terminal: perennial exec 'x = 41; x + 1'`,
        ),
        r.stderr,
      );
      assert.ok(!existsSync(infoPath), 'server.json is removed');
      const again = spawn(process.execPath, [CLI, '--data-dir', dir, 'exec', '-m', name, 'kept'], { env: { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON } });
      again.stdin?.end();
      assert.equal((await finished(again)).stdout, "'served'\n", 'the machine was saved when the server stopped');
    } finally {
      await stopServer(dir);
      await cleanup();
    }
  });

  it('stop asks the server by a request (no signal, which Windows lacks); it saves a warm machine and ends', async () => {
    const { dir, cleanup } = await tempDataDir();
    try {
      const env = { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON };
      const child = spawn(process.execPath, [CLI, '--data-dir', dir, 'serve', '--engine', 'python'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const done = finished(child);
      const infoPath = join(dir, 'server.json');
      await eventually(() => existsSync(infoPath), 20_000, 'server.json');
      const info = JSON.parse(readFileSync(infoPath, 'utf8')) as { url: string; token: string };
      const made = spawn(process.execPath, [CLI, '--data-dir', dir, 'exec', 'kept = "before stop"'], { env });
      const name = /^machine: (\S+)$/m.exec((await finished(made)).stderr)?.[1];
      assert.ok(name, 'a machine was made');
      const refused = await fetch(`${info.url}/v1/server/stop`, { method: 'POST' });
      assert.equal(refused.status, 401, 'a stop request without the token is refused');
      const asked = await fetch(`${info.url}/v1/server/stop`, { method: 'POST', headers: { authorization: `Bearer ${info.token}` } });
      assert.equal(asked.status, 202);
      const r = await done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /Stopping: saving machines/);
      assert.ok(!existsSync(infoPath), 'server.json is removed');
      const again = spawn(process.execPath, [CLI, '--data-dir', dir, 'exec', '-m', name, 'kept'], { env });
      assert.equal((await finished(again)).stdout, "'before stop'\n", 'the machine was saved when the server stopped');
    } finally {
      await stopServer(dir);
      await cleanup();
    }
  });

  it('status reports the server and its machines, and starts none', async () => {
    const { dir, cleanup } = await tempDataDir();
    try {
      const none = await cli(['--data-dir', dir, 'status']);
      assert.match(none.stdout, /^No Perennial server runs on /);
      assert.ok(!existsSync(join(dir, 'server.json')));
    } finally {
      await cleanup();
    }
    await cli(['exec', '1']);
    const report = JSON.parse((await cli(['status', '--json'])).stdout) as { running: boolean; machines: { total: number }; engines: Array<{ name: string }> };
    assert.equal(report.running, true);
    assert.ok(report.machines.total >= 1);
    assert.deepEqual(report.engines.map((e) => e.name).sort(), ['python', 'sandbox']);
    assert.match((await cli(['status'])).stdout, /^Perennial \S+ server, pid \d+, at http:\/\/127\.0\.0\.1:\d+\ndata dir: /);
    // Which machines stay warm, and why one is out.
    const name = /^machine: (\S+)$/m.exec((await cli(['exec', 'y = 2'])).stderr)![1]!;
    await cli(['machine', 'swap', name]);
    const said = (await cli(['status'])).stdout;
    assert.match(
      said,
      /\nwarm machines: idle machines are swapped out after \d+ s; machines stay warm while more than \d+ MiB of memory stays available \(now \d+ MiB\)\n/,
    );
    assert.match(said, new RegExp(`\\n  ${name} swapped out \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d: asked to \\(perennial machine swap, or the API\\)\\n`));
  });

  it('login saves a checked token (0600), and --backend forevervm then works through it', async () => {
    // A local server stands in for the hosted service: same protocol.
    const hosted = await tempDataDir();
    const home = await tempDataDir();
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    const stand = await LocalServer.start({ dataDir: hosted.dir, defaultEngine: 'python' });
    const env = { HOME: home.dir };
    try {
      const refused = await cliWith(env, ['login', '--token', 'wrong-token', '--base-url', stand.url]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /refused the token; nothing was saved/);
      const saved = await cliWith(env, ['login', '--base-url', stand.url], stand.token + '\n');
      assert.equal(saved.code, 0, saved.stderr);
      assert.match(saved.stderr, /Logged in to .* as .*Perennial local server/);
      const config = join(home.dir, '.config', 'forevervm', 'config.json');
      assert.deepEqual(JSON.parse(readFileSync(config, 'utf8')), { token: stand.token, server_url: stand.url });
      assert.equal(statSync(config).mode & 0o777, 0o600);
      const run = await cliWith(env, ['--backend', 'forevervm', 'exec', 'x = 5\nx * 2']);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, '10\n');
      const name = /^machine: (\S+)$/m.exec(run.stderr)![1]!;
      assert.equal(stand.manager.get(name).nextSeq, 1, 'the machine lives on the "hosted" side');
      const status = await cliWith(env, ['status', '--backend', 'forevervm']);
      assert.match(status.stdout, /account .*\(Perennial local server\), 1 machines/);
    } finally {
      await stand.close();
      delete process.env.PERENNIAL_PYTHON;
      await hosted.cleanup();
      await home.cleanup();
    }
  });

  it('repl: multi-line statements, values, Ctrl-C interrupts the running cell; its machine is shared with other commands', async () => {
    const child = start(['repl']);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d));
    child.stderr!.on('data', (d: Buffer) => (stderr += d));
    const send = (line: string) => child.stdin!.write(line + '\n');
    send('def twice(v):');
    send('    return v * 2');
    send('');
    send('twice(21)');
    await eventually(() => stdout.includes('42\n'), 20_000, 'the value 42');
    const machine = /Perennial REPL on machine (\S+):/.exec(stderr)?.[1];
    assert.ok(machine);
    const shared = await cli(['exec', '-m', machine, 'twice(4)']);
    assert.equal(shared.stdout, '8\n', 'another command sees what the REPL defined');
    send('print("sleeping"); import time; time.sleep(60)');
    await eventually(() => stdout.includes('sleeping\n'), 10_000, 'the cell to run');
    child.kill('SIGINT');
    await eventually(() => stderr.includes('KeyboardInterrupt'), 10_000, 'the interrupt');
    send('twice("ab")');
    await eventually(() => stdout.includes("'abab'"), 10_000, 'the machine to live on');

    child.stdin!.end();
    const r = await finished(child);
    assert.equal(r.code, 0, stderr);
    assert.match(stderr, /Perennial REPL on machine \S+: \w+ engine, .*Python [\d.]+.*\. Ctrl-C interrupts; exit\(\) or Ctrl-D leaves/);
  });

  it('a machine deleted under a REPL attached to it, then asked for by repl and exec: one line each, and the REPL ends', async () => {
    await cli(['machine', 'new', '--engine', 'python', '--name', 'deleted-under-repl']);
    const child = start(['repl', 'deleted-under-repl']);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d));
    child.stderr!.on('data', (d: Buffer) => (stderr += d));
    child.stdin!.write('kept = 41\nkept + 1\n');
    await eventually(() => stdout.includes('42\n'), 20_000, 'the REPL to run');
    assert.equal((await cli(['machine', 'rm', 'deleted-under-repl'])).code, 0);
    child.stdin!.write('kept\n');
    const repl = await finished(child);
    assert.equal(repl.code, 1);
    const said = stderr.split('\n').filter((line) => line.startsWith('perennial:'));
    assert.deepEqual(said, [
      'perennial: Machine deleted-under-repl was deleted; no other machine is given its name (perennial machine list shows every machine)',
    ]);
    assert.doesNotMatch(stderr, /keeps its state; come back with/, 'no way back is offered to a deleted machine');
    for (const args of [
      ['repl', 'deleted-under-repl'],
      ['exec', '-m', 'deleted-under-repl', '1'],
    ]) {
      const again = await cli(args);
      assert.equal(again.code, 1, args.join(' '));
      assert.equal(
        again.stderr,
        'perennial: Machine deleted-under-repl was deleted; no other machine is given its name (perennial machine list shows every machine)\n',
      );
    }
  });

  it("repl: a cell's input() asks at the prompt, and the question shows once", async () => {
    const child = start(['repl', '--engine', 'python']);
    let stdout = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d));
    const send = (line: string) => child.stdin!.write(line + '\n');
    send('answer = input("Your answer? ")');
    await eventually(() => stdout.includes('Your answer? '), 20_000, "the cell's question");
    send('forty-two');
    send('answer');
    await eventually(() => stdout.includes("'forty-two'"), 10_000, 'the answer in the namespace');
    assert.equal(stdout.split('Your answer? ').length, 2, 'the question shows once');
    child.stdin!.end();
    assert.equal((await finished(child)).code, 0);
  });

  it('repl in a terminal: Tab completes from the machine; a continuation line shows "... ", indented as the block needs, and Tab indents it further', async () => {
    const terminal = new TerminalSession([process.execPath, CLI, '--data-dir', dataDir, 'repl'], { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON });
    const shows = (what: RegExp | string, description: string) =>
      eventually(() => (typeof what === 'string' ? terminal.screen.includes(what) : what.test(terminal.screen)), 20_000, description);
    try {
      await eventually(() => terminal.screen.includes('>>> '), 30_000, 'the prompt');
      terminal.type('completion_target_value = 20\r');
      await eventually(() => terminal.screen.split('>>> ').length > 2, 20_000, 'the next prompt');
      terminal.type('completion_tar\t');
      await shows(/completion_target_value$/, 'the name completed');
      terminal.type(' + 1\r');
      await shows('21\r\n', 'the completed line run');
      // Typed as a person types it, unindented, once the prompt is back (typed ahead, a line is not
      // indented): the prompt indents after the colon, as Python's and IPython's do.
      await shows(/>>> $/, 'the prompt back');
      terminal.type('for i in range(3):\r');
      await shows(/\.\.\. {5}$/, 'the continuation prompt, indented after the colon');
      terminal.type('print("in" + "dented", i)\r');
      await shows(/print\("in" \+ "dented", i\)\r*\n\.\.\. {5}$/, 'the next line at the same depth');
      terminal.type('\r');
      await shows('indented 2\r\n', 'the block run, ended by a line of indentation alone');
      assert.match(terminal.screen, /indented 0\r\nindented 1\r\nindented 2/);
      await shows(/>>> $/, 'the prompt back');
      terminal.type('def seven():\r');
      await shows(/def seven\(\):\r*\n\.\.\. {5}$/, 'the function body indented');
      terminal.type('return 7\r');
      await shows(/return 7\r*\n\.\.\. $/, 'the line after return back at the block above');
      terminal.type('\r');
      await shows(/\.\.\. \r*\n>>> $/, 'the function defined, and the prompt back');
      terminal.type('if seven() == 7:\r');
      await shows(/if seven\(\) == 7:\r*\n\.\.\. {5}$/, 'indented after the colon');
      // A key at a time, as typed: readline takes a Tab inside pasted text for text.
      terminal.type('\t');
      await shows(/\.\.\. {9}$/, 'Tab indents a level further');
      terminal.type('print("nested")\r\r');
      await shows('nested\r\n', 'the more deeply indented block run');
    } finally {
      terminal.close();
    }
  });
});

describe('perennial on a system where no Python is found', { timeout: 120_000 }, () => {
  let dataDir: string;
  let cleanup: () => Promise<void>;
  // Nothing on the PATH: neither python3 nor python (nor bubblewrap: sandbox machines run on).
  const cli = (...args: string[]) => {
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: join(dataDir, 'empty-path') };
    delete env.PERENNIAL_PYTHON;
    const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    return finished(child);
  };

  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir());
  });
  after(async () => {
    await stopServer(dataDir);
    await cleanup();
  });

  it('says the python engine is unavailable and why, refuses a python machine and makes none, and runs one that names its interpreter', async () => {
    const refused = await cli('machine', 'new', '--engine', 'python');
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      /No Python 3\.8 or newer found for python machines \(python3: not found; python: not found\); install Python, or name an interpreter/,
    );
    assert.deepEqual(JSON.parse((await cli('machine', 'list', '--json')).stdout), []);
    const status = JSON.parse((await cli('status', '--json')).stdout) as { engines: Array<{ name: string; available: boolean; detail: string }> };
    const python = status.engines.find((e) => e.name === 'python')!;
    assert.equal(python.available, false);
    assert.match(python.detail, /^No Python 3\.8 or newer found/);
    const named = await cli('exec', '--engine', 'python', '--python', TEST_PYTHON, 'import sys\nsys.version_info >= (3, 8)');
    assert.equal(named.code, 0, named.stderr);
    assert.equal(named.stdout, 'True\n');
  });
});

describe('perennial machine upgrade, on a data dir an earlier build wrote', { timeout: 360_000 }, () => {
  let dataDir: string;
  let cleanup: () => Promise<void>;
  const fixture = fileURLToPath(new URL('../fixtures/data-dirs/bc367fb/', import.meta.url));
  const { machines } = JSON.parse(readFileSync(join(fixture, 'fixture.json'), 'utf8')) as { machines: Array<{ engine: string; name: string }> };
  const sandbox = machines.find((m) => m.engine === 'sandbox')!.name;
  const python = machines.find((m) => m.engine === 'python')!.name;
  const cli = (args: string[]) => finished(spawn(process.execPath, [CLI, '--data-dir', dataDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }));

  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir());
    cpSync(fixture, dataDir, { recursive: true });
  });
  after(async () => {
    await stopServer(dataDir);
    await cleanup();
  });

  it('lists the runtime of each machine, marks the ones on an older one, and says how to upgrade them', async () => {
    const listed = await cli(['machine', 'list']);
    assert.match(listed.stdout, new RegExp(`^${sandbox}\\s+sandbox\\s+Pyodide 0\\.29\\.0 \\(Python 3\\.13\\.2\\)\\*\\s+swapped`, 'm'));
    assert.match(
      listed.stderr,
      new RegExp(`${sandbox}.*: on an older runtime; move to Pyodide 314\\.0\\.7 \\(Python 3\\.14\\.2\\) with: perennial machine upgrade NAME`),
    );
    assert.match((await cli(['status'])).stdout, /machines: 4 .*\n {2}2 on an older runtime: see perennial machine list, and perennial machine upgrade NAME/);
  });

  it('upgrades a sandbox machine, says what it could not carry and how to go back, and refuses what it cannot do', async () => {
    const upgraded = await cli(['machine', 'upgrade', sandbox]);
    assert.equal(upgraded.code, 0, upgraded.stderr);
    assert.match(
      upgraded.stderr,
      new RegExp(`^${sandbox} now runs Pyodide 314\\.0\\.7 \\(Python 3\\.14\\.2\\); it ran Pyodide 0\\.29\\.0 \\(Python 3\\.13\\.2\\)\\.$`, 'm'),
    );
    assert.match(upgraded.stderr, /^ {2}not carried: k_gen \(a paused generator cannot be pickled/m);
    assert.match(upgraded.stderr, new RegExp(`to go back to it: perennial rollback ${sandbox} before-upgrade-from-0\\.29\\.0$`, 'm'));
    assert.equal((await cli(['exec', '-m', sandbox, 'import sys; sys.version[:4], k_count'])).stdout, "('3.14', 5)\n");
    const again = await cli(['machine', 'upgrade', sandbox]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /cannot be upgraded: it runs Pyodide 314\.0\.7 \(Python 3\.14\.2\) already, the newest this Perennial has/);
    const pythonMachine = await cli(['machine', 'upgrade', python]);
    assert.equal(pythonMachine.code, 1);
    assert.match(pythonMachine.stderr, /cannot be upgraded: its python engine runs the interpreter it was given/);
  });
});
