import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { CURRENT_PYODIDE } from '../../src/engines/sandbox/pyodide-runtimes.ts';
import type { MachineManager } from '../../src/machines/machine-manager.ts';
import { errorOf, managerFixture, openManager, run, tempDataDir, valueOf } from '../helpers/machines.ts';

const MAKE_WHEEL = fileURLToPath(new URL('../fixtures/make_wheel.py', import.meta.url));

interface Wheel {
  name: string;
  version: string;
  files: Record<string, string>;
  depends?: string[];
  /** Import names, when not the package's name. */
  imports?: string[];
  /** Write the lock entry but not the wheel (an offline cache miss). */
  missing?: boolean;
  /** Record a wrong sha256 in the lock file. */
  tampered?: boolean;
}

/**
 * A package source the test builds itself: pure-Python wheels and a lock file that keeps the
 * pinned Pyodide's `info` block (its Python and ABI must match).
 */
async function makeSource(dir: string, wheels: Wheel[]): Promise<void> {
  const pyodideLock = JSON.parse(await readFile(createRequire(import.meta.url).resolve('pyodide/pyodide-lock.json'), 'utf8')) as { info: unknown };
  const packages: Record<string, unknown> = {};
  for (const wheel of wheels) {
    const path = execFileSync('python3', [MAKE_WHEEL, dir, wheel.name, wheel.version, JSON.stringify(wheel.files), ...(wheel.depends ?? [])], {
      encoding: 'utf8',
    }).trim();
    const sha256 = wheel.tampered
      ? '0'.repeat(64)
      : createHash('sha256')
          .update(await readFile(path))
          .digest('hex');
    if (wheel.missing) await rm(path);
    packages[wheel.name] = {
      name: wheel.name,
      version: wheel.version,
      file_name: `${wheel.name}-${wheel.version}-py3-none-any.whl`,
      install_dir: 'site',
      package_type: 'package',
      sha256,
      imports: wheel.imports ?? [wheel.name],
      depends: wheel.depends ?? [],
      unvendored_tests: false,
    };
  }
  await writeFile(join(dir, 'pyodide-lock.json'), JSON.stringify({ info: pyodideLock.info, packages }));
}

describe('sandbox packages from a lock file and a wheel folder', { timeout: 240_000 }, () => {
  let source: string;
  before(async () => {
    source = await mkdtemp(join(tmpdir(), 'perennial-wheels-'));
    await makeSource(source, [
      { name: 'tinydep', version: '0.2.0', files: { 'tinydep/__init__.py': 'def greet(who):\n    return f"hello {who}"\n' } },
      {
        name: 'tinypkg',
        version: '0.1.0',
        depends: ['tinydep'],
        files: { 'tinypkg/__init__.py': 'from tinydep import greet\nVERSION = "0.1.0"\n', 'tinypkg/extra.py': 'def shout(text):\n    return text.upper()\n' },
      },
      { name: 'ghostpkg', version: '1.0.0', missing: true, files: { 'ghostpkg/__init__.py': '' } },
      { name: 'badpkg', version: '1.0.0', tampered: true, files: { 'badpkg/__init__.py': '' } },
      // As in Pyodide's own index, which lists IPython; offline, the test cannot have its wheel.
      { name: 'ipython', version: '9.12.0', imports: ['IPython'], missing: true, files: { 'IPython/__init__.py': '' } },
    ]);
    process.env.PERENNIAL_PYODIDE_PACKAGES = source;
  });
  const fixture = managerFixture({ saveDelayMs: 60_000 });
  let manager: MachineManager;
  before(() => {
    manager = fixture.manager;
  });
  after(async () => {
    delete process.env.PERENNIAL_PYODIDE_PACKAGES;
    await rm(source, { recursive: true, force: true });
  });

  it('installs an imported package and its dependencies before the cell runs, and keeps them across a swap', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    // Installing counts against the instruction's timeout: leave room for a loaded machine.
    const r = await run(manager, name, 'import tinypkg\ntinypkg.greet("sandbox"), tinypkg.VERSION', { timeoutSeconds: 60 });
    assert.equal(valueOf(r.result), "('hello sandbox', '0.1.0')");
    assert.match(r.stderr, /perennial: installing tinydep 0\.2\.0, tinypkg 0\.1\.0/);
    const cache = join(manager.dataDir, 'engines', 'sandbox', CURRENT_PYODIDE.cacheFolder, 'packages');
    assert.deepEqual((await readdir(cache)).sort(), ['tinydep-0.2.0-py3-none-any.whl', 'tinypkg-0.1.0-py3-none-any.whl']);
    await manager.swap(name);
    // A submodule never imported before the swap: the files of site-packages came back too.
    assert.equal(valueOf((await run(manager, name, 'import tinypkg.extra\ntinypkg.extra.shout(tinypkg.greet("again"))')).result), "'HELLO AGAIN'");
  });

  it('installs on request, by package name', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    assert.equal(await manager.installPackages(name, ['tinydep']), 'tinydep 0.2.0');
    assert.equal(valueOf((await run(manager, name, 'import tinydep\ntinydep.greet("you")')).result), "'hello you'");
    await assert.rejects(manager.installPackages(name, ['no-such-package']), /Unknown package "no-such-package": it is not in the package index/);
    await assert.rejects(manager.installPackages(name, ['--index-url=http://evil']), /not a package to install: "--index-url=http:\/\/evil"/);
    // Files and pip's sources are a python machine's: a sandbox installs from its index, by name.
    await assert.rejects(
      manager.installPackages(name, ['./dist/mine-1.0-py3-none-any.whl']),
      /a sandbox machine installs packages by name from its package index, not "\.\/dist\/mine-1\.0-py3-none-any\.whl"/,
    );
  });

  it('%pip install (and %micropip install) in any cell installs from the index before it runs, and says what it could not', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    const installed = await run(manager, name, '%pip install tinypkg==0.1.0', { timeoutSeconds: 60 });
    assert.equal(valueOf(installed.result), null);
    assert.match(installed.stderr, /perennial: installing tinydep 0\.2\.0, tinypkg 0\.1\.0/);
    assert.equal(valueOf((await run(manager, name, 'import tinypkg\ntinypkg.VERSION')).result), "'0.1.0'");
    const again = await run(manager, name, '# already there\n%micropip install tinypkg');
    assert.equal(again.stdout, 'Requirement already satisfied: tinypkg (0.1.0)');
    // In a cell with Python around it, in a block, as IPython takes a line magic; no IPython needed.
    const mixed = await run(manager, name, 'import sys\nif True:\n    %pip install tinydep\nsys.version_info[0]');
    assert.equal(valueOf(mixed.result), '3');
    assert.equal(mixed.stdout, 'Requirement already satisfied: tinydep (0.2.0)');
    const offline = errorOf((await run(manager, name, '%pip install ghostpkg')).result);
    assert.match(
      offline,
      /^PackageUnavailable: %pip install in a sandbox machine takes packages from its package index: Package "ghostpkg" 1\.0\.0 is not in the package cache/,
    );
    assert.match(offline, /To provide it offline, put ghostpkg-1\.0\.0-py3-none-any\.whl in /);
    assert.match(
      errorOf((await run(manager, name, '!pip install no-such-package')).result),
      /Unknown package "no-such-package": it is not in the package index/,
    );
  });

  it('names the package and how to provide it when it cannot be fetched', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    const error = errorOf((await run(manager, name, 'import ghostpkg')).result);
    assert.match(
      error,
      /^ModuleNotFoundError: Package "ghostpkg" 1\.0\.0 is not in the package cache and could not be fetched from .*ghostpkg-1\.0\.0-py3-none-any\.whl/,
    );
    assert.match(
      error,
      /To provide it offline, put ghostpkg-1\.0\.0-py3-none-any\.whl in .*engines\/sandbox\/pyodide-314\.0\.7\/packages, or point PERENNIAL_PYODIDE_PACKAGES at a folder of Pyodide wheels/,
    );
    assert.equal(valueOf((await run(manager, name, '"still fine"')).result), "'still fine'");
  });

  it('installs IPython from the index for a cell in IPython syntax, and only for one', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    await run(manager, name, 'x = 1');
    const error = errorOf((await run(manager, name, '%timeit x + 1')).result);
    assert.match(
      error,
      /^ModuleNotFoundError: this cell is in IPython's syntax \(a %magic, a !command\), so the machine first installs IPython and what it needs from its package index, and could not: Package "ipython" 9\.12\.0 is not in the package cache and could not be fetched from .*ipython-9\.12\.0-py3-none-any\.whl/,
    );
    assert.match(errorOf((await run(manager, name, 'get_ipython().run_line_magic("time", "x")')).result), /Package "ipython" 9\.12\.0/);
    // Python that merely looks like it (a question mark, a percent sign) installs nothing.
    const plain = await run(manager, name, 'print("what?")\nx % 1');
    assert.equal(valueOf(plain.result), '0');
    assert.doesNotMatch(plain.stderr, /installing/);
    const syntax = errorOf((await run(manager, name, '1 +')).result);
    assert.match(syntax, /SyntaxError/);
    assert.doesNotMatch(syntax, /ipython/i);
    assert.equal(valueOf((await run(manager, name, 'x')).result), '1');
  });

  it('refuses a wheel whose checksum does not match the lock file', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    assert.match(errorOf((await run(manager, name, 'import badpkg')).result), /badpkg.*does not match the lock file's sha256/);
  });

  it('knows what it may install after a swap, and learns a new package index when the source changes', async () => {
    const data = await tempDataDir();
    const other = await mkdtemp(join(tmpdir(), 'perennial-wheels-'));
    try {
      let own = await openManager({ dataDir: data.dir });
      const name = (await own.create({ engine: 'sandbox' })).name;
      await run(own, name, 'x = 1');
      await own.swap(name);
      const r = await run(own, name, 'import tinydep\ntinydep.greet("later")', { timeoutSeconds: 60 });
      assert.equal(valueOf(r.result), "'hello later'");
      assert.match(r.stderr, /perennial: installing tinydep 0\.2\.0/);
      await own.close();

      await makeSource(other, [{ name: 'newpkg', version: '3.0.0', files: { 'newpkg/__init__.py': 'ANSWER = 42\n' } }]);
      process.env.PERENNIAL_PYODIDE_PACKAGES = other;
      own = await openManager({ dataDir: data.dir });
      assert.equal(
        valueOf((await run(own, name, 'import newpkg\nnewpkg.ANSWER, tinydep.greet("still")', { timeoutSeconds: 60 })).result),
        "(42, 'hello still')",
      );
      // This index has no IPython: the cell says what it needs.
      assert.match(
        errorOf((await run(own, name, '%timeit newpkg.ANSWER')).result),
        /^IPythonMissing: this cell uses IPython syntax \(%timeit\), and this machine's Python has no IPython: install the package ipython into this machine \(perennial install NAME ipython/,
      );
      await own.close();
    } finally {
      process.env.PERENNIAL_PYODIDE_PACKAGES = source;
      await rm(other, { recursive: true, force: true });
      await data.cleanup();
    }
  });
});
