import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { listenToPhases } from '../../src/platform/phase-timings.ts';
import type { InputRequest } from '../../src/shared/types.ts';
import { TEST_PYTHON, managerFixture, otherPython, run, valueOf } from '../helpers/machines.ts';

const MAKE_WHEEL = fileURLToPath(new URL('../fixtures/make_wheel.py', import.meta.url));

describe("%pip install goes into the machine's own environment (python engine)", { timeout: 360_000 }, () => {
  const fixture = managerFixture({}, { empty: true });
  let dir: string;
  let name: string;
  const PIP_ENV = { PIP_NO_INDEX: '1', PIP_FIND_LINKS: '', PIP_DISABLE_PIP_VERSION_CHECK: '1' };
  const venvPython = () => join(dir, 'venv', 'bin', 'python');

  const path = process.env.PATH;

  before(async () => {
    // The person's own environment: a venv of the test interpreter (which has IPython), with a
    // package of its own, whose pip is the first on PATH (as a pyenv interpreter's is).
    dir = await mkdtemp(join(tmpdir(), 'perennial-pip-'));
    process.env.PATH = `${join(dir, 'venv', 'bin')}${delimiter}${path}`;
    execFileSync(TEST_PYTHON, ['-m', 'venv', '--system-site-packages', join(dir, 'venv')]);
    for (const [pkg, value] of [
      ['tinypip', 7],
      ['ownpkg', 5],
    ] as const)
      execFileSync(TEST_PYTHON, [MAKE_WHEEL, dir, pkg, '1.0', JSON.stringify({ [`${pkg}/__init__.py`]: `VALUE = ${value}\n` })]);
    Object.assign(process.env, { ...PIP_ENV, PIP_FIND_LINKS: dir });
    execFileSync(venvPython(), ['-m', 'pip', 'install', '--quiet', 'ownpkg']);
    name = (await fixture.manager.create({ engine: 'python', python: venvPython() })).name;
  });
  after(async () => {
    process.env.PATH = path;
    for (const variable of Object.keys(PIP_ENV)) delete process.env[variable];
    await rm(dir, { recursive: true, force: true });
  });

  it("sees the interpreter's packages, installs without asking, and changes nothing of the person's; a fork takes the package along", async () => {
    const asked: InputRequest[] = [];
    const onInput = async (request: InputRequest) => (asked.push(request), 'yes');
    assert.equal(valueOf((await run(fixture.manager, name, 'import ownpkg\nownpkg.VALUE')).result), '5', "the person's venv's own package");
    const installed = await run(fixture.manager, name, '%pip install tinypip', { onInput });
    assert.match(installed.stdout, /Successfully installed tinypip-1\.0/);
    assert.equal(valueOf((await run(fixture.manager, name, 'import tinypip, sys\ntinypip.VALUE')).result), '7');
    assert.deepEqual(asked, []);
    const prefix = valueOf((await run(fixture.manager, name, 'sys.prefix')).result)!;
    assert.equal(prefix, `'${fixture.manager.dataDir}/machines/${name}/environment'`);
    assert.throws(() => execFileSync(venvPython(), ['-c', 'import tinypip'], { stdio: 'pipe' }), /No module named 'tinypip'/);
    // After a swap, in a new process, and in a fork.
    await fixture.manager.swap(name);
    assert.equal(valueOf((await run(fixture.manager, name, 'tinypip.VALUE')).result), '7');
    const fork = (await fixture.manager.fork(name)).name;
    assert.equal(
      valueOf((await run(fixture.manager, fork, 'import sys, tinypip\n(sys.prefix, tinypip.VALUE)')).result),
      `('${fixture.manager.dataDir}/machines/${fork}/environment', 7)`,
    );
  });

  it("`!pip install` of a wheel lands there and nowhere else: a cell's shell commands and subprocesses find the environment's pip and python first", async () => {
    const wheels = await mkdtemp(join(dir, 'bang-'));
    const wheel = execFileSync(TEST_PYTHON, [MAKE_WHEEL, wheels, 'bangpkg', '1.0', JSON.stringify({ 'bangpkg/__init__.py': 'VALUE = 11\n' })], {
      encoding: 'utf8',
    }).trim();
    const personSite = execFileSync(venvPython(), ['-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'], { encoding: 'utf8' }).trim();
    const interpreterSite = execFileSync(TEST_PYTHON, ['-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'], { encoding: 'utf8' }).trim();
    const listing = async () => [await readdir(personSite), await readdir(interpreterSite).catch(() => [])];
    const before = await listing();
    const installed = await run(fixture.manager, name, `!pip install ${wheel}`);
    assert.match(installed.stdout, /Successfully installed bangpkg-1\.0/);
    assert.equal(valueOf((await run(fixture.manager, name, 'import bangpkg\nbangpkg.VALUE')).result), '11');
    const environment = join(fixture.manager.dataDir, 'machines', name, 'environment');
    const found =
      'import shutil, subprocess\n(shutil.which("pip"), subprocess.run(["python", "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True).stdout.strip())';
    assert.equal(valueOf((await run(fixture.manager, name, found)).result), `('${join(environment, 'bin', 'pip')}', '${environment}')`);
    assert.equal((await run(fixture.manager, name, '!python -c "import sys; print(sys.prefix)"')).stdout.trim(), environment);
    assert.deepEqual(await listing(), before, "neither the person's venv nor the interpreter's site-packages changed");
    assert.throws(() => execFileSync(venvPython(), ['-c', 'import bangpkg'], { stdio: 'pipe' }), /No module named 'bangpkg'/);
  });

  it('install-python-packages installs there too', async () => {
    execFileSync(TEST_PYTHON, [MAKE_WHEEL, dir, 'toolpkg', '1.0', JSON.stringify({ 'toolpkg/__init__.py': 'VALUE = 3\n' })]);
    assert.match(await fixture.manager.installPackages(name, ['toolpkg']), /Successfully installed toolpkg-1\.0/);
    assert.equal(valueOf((await run(fixture.manager, name, 'import toolpkg\ntoolpkg.VALUE')).result), '3');
    assert.throws(() => execFileSync(venvPython(), ['-c', 'import toolpkg'], { stdio: 'pipe' }));
  });

  it("comes back in a kernel started ahead (the pool's) as its environment's interpreter would have started it", async () => {
    // A newer version of a package the person's interpreter has: the machine's comes first.
    execFileSync(TEST_PYTHON, [MAKE_WHEEL, dir, 'ownpkg', '2.0', JSON.stringify({ 'ownpkg/__init__.py': 'VALUE = 6\n' })]);
    await fixture.manager.installPackages(name, ['ownpkg==2.0']);
    const probe =
      'import json, site, sys, sysconfig, ownpkg\nprint(json.dumps([sys.path, sys.prefix, sys.exec_prefix, sys.executable, site.getsitepackages(), sysconfig.get_paths(), ownpkg.VALUE]))';
    const environment = join(fixture.manager.dataDir, 'machines', name, 'environment');
    const environmentPython = join(
      environment,
      (JSON.parse(readFileSync(join(environment, 'perennial-environment.json'), 'utf8')) as { executable: string }).executable,
    );
    const expected = JSON.parse(execFileSync(environmentPython, ['-c', probe], { encoding: 'utf8' })) as unknown[];
    assert.equal(expected.at(-1), 6);
    const starts: string[] = [];
    const stop = listenToPhases(({ phase }) => phase.startsWith('python: ') && phase !== 'python: environment found' && starts.push(phase));
    try {
      // Machines started on an interpreter fill its pool: a start comes from it once it has a kernel ready.
      for (let i = 0; i < 5 && !starts.includes('python: ready kernel given its machine'); i++) {
        while (!fixture.manager.engineStatus().find((e) => e.name === 'python')!.ready) await new Promise((resolve) => setTimeout(resolve, 50));
        starts.length = 0;
        await fixture.manager.swap(name);
        const seen = JSON.parse((await run(fixture.manager, name, probe)).stdout) as unknown[];
        if (starts.includes('python: ready kernel given its machine')) assert.deepEqual(seen, expected);
      }
      assert.ok(starts.includes('python: ready kernel given its machine'), `no start came from the pool: ${starts.join(', ')}`);
    } finally {
      stop();
    }
  });
});

describe("a python machine's environment when its interpreter changes", { timeout: 360_000 }, () => {
  const fixture = managerFixture({}, { empty: true });
  after(() => {
    delete process.env.PERENNIAL_PYTHON;
  });

  it('is set aside, never deleted, and the next result says where; a new one is made', async () => {
    // A machine on the default interpreter, which PERENNIAL_PYTHON names.
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    const name = (await fixture.manager.create({ engine: 'python' })).name;
    valueOf((await run(fixture.manager, name, 'kept = 1')).result);
    await fixture.manager.swap(name);
    process.env.PERENNIAL_PYTHON = otherPython().python;
    const after = await run(fixture.manager, name, 'kept');
    assert.equal(valueOf(after.result), '1');
    const notices = after.result.data?.notices ?? [];
    assert.ok(
      notices.some((n) =>
        new RegExp(
          `^This machine's packages were installed for ${TEST_PYTHON} \\(Python [\\d.]+\\), and it now runs .*python-without-packages/bin/python3 \\(Python [\\d.]+\\): they were set aside in .*environment-set-aside-\\d+; install them again\\.$`,
        ).test(n),
      ),
      notices.join('\n'),
    );
    const folder = join(fixture.manager.dataDir, 'machines', name);
    assert.equal((await readdir(folder)).filter((entry) => entry.startsWith('environment-set-aside-')).length, 1);
  });
});
