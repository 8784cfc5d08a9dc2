import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { HttpClient } from '../../src/client/http-client.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { CLI, jupyterBed, KERNEL, PLUGIN_DIR, SANDBOX_KERNEL } from '../helpers/jupyter-bed.ts';
import { TEST_PYTHON, tempDataDir } from '../helpers/machines.ts';
import { finished } from '../helpers/processes.ts';

const VENDOR_DIR = fileURLToPath(new URL('../vendor/', import.meta.url));

/**
 * Perennial as a Jupyter kernel (issue 51), through Jupyter's own clients from Debian:
 * jupyter_client's KernelManager and blocking client, and ipykernel's message-spec suite, every
 * message checked against ipykernel's references. The kernelspec is the one `perennial kernel
 * install` writes, in a Jupyter data folder of the test's own. Notebooks in Jupyter's servers and
 * nbclient: jupyter-notebooks.test.ts.
 */
describe('perennial kernel: Jupyter clients on Perennial machines', { timeout: 600_000 }, () => {
  const bed = jupyterBed();

  it('kernel install writes a kernelspec Jupyter finds, which runs this CLI on the data dir; list and remove', async () => {
    const spec = JSON.parse(readFileSync(join(bed.dataDir, 'jupyter', 'kernels', KERNEL, 'kernel.json'), 'utf8')) as { argv: string[]; interrupt_mode: string };
    assert.deepEqual(spec.argv, [
      process.execPath,
      CLI,
      '--data-dir',
      bed.dataDir,
      'kernel',
      '--connection-file',
      '{connection_file}',
      '--engine',
      'python',
      '--python',
      TEST_PYTHON,
    ]);
    assert.equal(spec.interrupt_mode, 'message');
    const found = await bed.python([
      '-c',
      `from jupyter_client.kernelspec import KernelSpecManager as M; print(M().get_kernel_spec(${JSON.stringify(KERNEL)}).display_name)`,
    ]);
    assert.equal(found.stdout.trim(), 'Python (Perennial)', found.stderr);

    const prefix = join(bed.dataDir, 'prefix');
    const pinned = await bed.cli(['kernel', 'install', '--prefix', prefix, '--machine', 'shared-state']);
    assert.equal(pinned.code, 0, pinned.stderr);
    assert.ok(existsSync(join(prefix, 'share', 'jupyter', 'kernels', 'perennial-shared-state', 'kernel.json')));
    const listed = await bed.cli(['kernel', 'list']);
    assert.match(listed.stdout, new RegExp(`${KERNEL} +Python \\(Perennial\\) +python engine`));
    assert.match(listed.stdout, new RegExp(`${SANDBOX_KERNEL} +Python \\(Perennial, sandbox\\) +sandbox engine`));
    const both = await bed.cli(['kernel', 'install', '--user', '--prefix', prefix]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /at most one of --user, --sys-prefix and --prefix/);
    const badName = await bed.cli(['kernel', 'install', '--name', 'Bad Name']);
    assert.match(badName.stderr, /a kernel name is 1 to 64 lowercase letters/);

    // As python -m ipykernel install in an environment: the python engine on the environment's
    // interpreter (a venv's bin/python), named absolutely; the sandbox's has a name of its own.
    const venv = join(bed.dataDir, 'a venv');
    await mkdir(join(venv, 'bin'), { recursive: true });
    symlinkSync(TEST_PYTHON, join(venv, 'bin', 'python'));
    const inVenv: NodeJS.ProcessEnv = { ...bed.env, VIRTUAL_ENV: venv };
    delete inVenv.PERENNIAL_PYTHON;
    const person = await finished(
      spawn(process.execPath, [CLI, '--data-dir', bed.dataDir, 'kernel', 'install', '--name', 'perennial-venv'], {
        env: inVenv,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    assert.equal(person.code, 0, person.stderr);
    const venvSpec = JSON.parse(readFileSync(join(bed.dataDir, 'jupyter', 'kernels', 'perennial-venv', 'kernel.json'), 'utf8')) as {
      argv: string[];
      display_name: string;
    };
    assert.deepEqual(venvSpec.argv.slice(-4), ['--engine', 'python', '--python', join(venv, 'bin', 'python')]);
    assert.equal(venvSpec.display_name, 'Python (Perennial)');
    assert.match(person.stderr, /Its notebooks run on .*a venv\/bin\/python, with its packages/);
    const noPython = await bed.cli(['kernel', 'install', '--name', 'perennial-none', '--python', join(bed.dataDir, 'no-python')]);
    assert.equal(noPython.code, 1);
    assert.match(noPython.stderr, /no-python cannot run notebooks \(.*not found\); name one with --python, or install the sandbox's kernel/);
    const sandboxDefault = await bed.cli(['kernel', 'install', '--prefix', prefix, '--engine', 'sandbox']);
    assert.equal(sandboxDefault.code, 0, sandboxDefault.stderr);
    assert.ok(existsSync(join(prefix, 'share', 'jupyter', 'kernels', 'perennial-sandbox', 'kernel.json')));

    const removedSpec = await bed.cli(['kernel', 'install', '--name', 'perennial-gone']);
    assert.equal(removedSpec.code, 0, removedSpec.stderr);
    const removed = await bed.cli(['kernel', 'remove', 'perennial-gone']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.ok(!existsSync(join(bed.dataDir, 'jupyter', 'kernels', 'perennial-gone')));
    const missing = await bed.cli(['kernel', 'remove', 'perennial-gone']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no Perennial kernel called perennial-gone/);
  });

  it("ipykernel's message-spec suite passes whole: every test, kernel_info held to Perennial's version rather than IPython's", async () => {
    const run = await bed.python([
      '-m',
      'pytest',
      '-p',
      'kernel_under_test',
      '-p',
      'no:cacheprovider',
      '-q',
      '--rootdir',
      PLUGIN_DIR,
      '--pyargs',
      'ipykernel.tests.test_message_spec',
    ]);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^(\d+) passed in /m);
    assert.doesNotMatch(run.stdout, /skipped|deselected|failed/);
    assert.ok(Number(/^(\d+) passed/m.exec(run.stdout)![1]) >= 23, run.stdout);
  });

  it("Jupyter's kernel conformance suite (jupyter_kernel_test) passes every test on the default kernel: the python engine on the person's Python", async () => {
    const run = await finished(
      spawn(TEST_PYTHON, ['-m', 'unittest', '-v', 'kernel_conformance'], {
        env: { ...bed.env, PYTHONPATH: `${PLUGIN_DIR}${delimiter}${VENDOR_DIR}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    // unittest reports on stderr.
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^Ran 12 tests in /m);
    assert.doesNotMatch(run.stderr, /skipped/);
    assert.match(run.stderr, /^OK$/m, 'nothing skipped, nothing failed');
  });

  it('a notebook kernel killed with kill -9, then the server stopped: each new kernel for the notebook has its state; shutdown swaps it out', async () => {
    const out = await bed.scenario('kernel_death');
    assert.match(out, /shutdown swapped the machine out/);
    assert.match(out, /found x, a function and an import/);
    assert.match(out, /another notebook has a machine of its own/);
  });

  it("ipykernel's look: an IPython traceback naming cells by In [n], a cell after an error aborted without a number", async () => {
    assert.match(await bed.scenario('ipython_look'), /aborted, with no number/);
  });

  it('an interrupt by message, and one by signal to the kernel process, stops the cell and keeps the state', async () => {
    assert.match(await bed.scenario('interrupt'), /by message and by signal, state kept/);
  });

  it("the notebook's machine deleted under its kernel: the cell says so, the next runs on a new machine", async () => {
    assert.match(await bed.scenario('deleted'), /next cell runs on a new machine/);
  });

  it('a restart gives a clean namespace and names the checkpoint that holds the state before', async () => {
    assert.match(await bed.scenario('restart'), /brought z back/);
  });

  it('input() and getpass() are answered through the stdin channel', async () => {
    assert.match(await bed.scenario('stdin'), /answered through stdin/);
  });

  it('drops what no client should send (not ZMTP, another key, not Jupyter) and answers on', async () => {
    assert.match(await bed.scenario('bad_peers'), /answers on/);
  });

  it('refuses a connection file it cannot use, saying why', async () => {
    const none = await bed.cli(['kernel']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /Jupyter starts it with --connection-file FILE; to make it a kernel Jupyter offers: perennial kernel install/);
    const missing = await bed.cli(['kernel', '--connection-file', join(bed.dataDir, 'nowhere.json')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /Cannot read the connection file .*nowhere\.json/);
    const ipc = join(bed.dataDir, 'ipc.json');
    writeFileSync(ipc, JSON.stringify({ transport: 'ipc', ip: 'kernel', shell_port: 1, iopub_port: 2, stdin_port: 3, control_port: 4, hb_port: 5 }));
    const refused = await bed.cli(['kernel', '--connection-file', ipc]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /only the tcp transport is supported/);
  });

  it("a kernel on a team's server (login --server, then kernel install under --server): the notebook's machine is the person's there, in the sandbox, and no one else's to see", async () => {
    const team = await tempDataDir({ empty: true });
    const server = await LocalServer.start({ dataDir: team.dir, defaultEngine: 'sandbox' });
    const operator = new HttpClient({ baseUrl: server.url, token: server.token });
    const people: HttpClient[] = [];
    const person = (key: string) => people[people.push(new HttpClient({ baseUrl: server.url, token: key })) - 1]!;
    try {
      const { key } = await operator.team('init', { owner: 'alice' });
      const alice = person(key);
      await alice.team('addPerson', { name: 'bob' });
      const bob = person((await alice.team('createKey', { person: 'bob', name: 'laptop', scopes: ['read', 'run', 'manage'] })).key);
      const login = await bed.cli(['--server', server.url, 'login', '--token', key]);
      assert.equal(login.code, 0, login.stderr);
      const installed = await bed.cli(['--server', server.url, 'kernel', 'install', '--prefix', join(bed.dataDir, 'team')]);
      assert.equal(installed.code, 0, installed.stderr);
      assert.match(installed.stderr, /Its notebooks run on http:\/\/127\.0\.0\.1:\d+ \(in its sandbox\).*files beside it are not there/);
      const name = `perennial-127.0.0.1-${new URL(server.url).port}`;
      const spec = JSON.parse(readFileSync(join(bed.dataDir, 'team', 'share', 'jupyter', 'kernels', name, 'kernel.json'), 'utf8')) as {
        argv: string[];
        display_name: string;
      };
      assert.deepEqual(spec.argv.slice(2), [
        '--data-dir',
        bed.dataDir,
        '--server',
        server.url,
        'kernel',
        '--connection-file',
        '{connection_file}',
        '--engine',
        'sandbox',
      ]);
      assert.equal(spec.display_name, `Python (Perennial, 127.0.0.1:${new URL(server.url).port})`);

      const out = await bed.scenario('on_a_team_server', {
        JUPYTER_PATH: join(bed.dataDir, 'team', 'share', 'jupyter'),
        PERENNIAL_TEAM_KERNEL_NAME: name,
        PERENNIAL_TEAM_SERVER: server.url,
      });
      assert.match(out, /is alice's on the team's server, and kept x/);
      const machine = /machine (\S+) is alice's/.exec(out)![1]!;
      assert.deepEqual(
        (await alice.list()).map((m) => m.name),
        [machine],
      );
      assert.deepEqual(await bob.list(), []);
    } finally {
      for (const client of [operator, ...people]) await client.close();
      await server.close();
      await team.cleanup();
    }
  });
});
