import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, type Transport, type VersionNegotiationMode } from '@modelcontextprotocol/client';
import type { LocalServer } from '../../src/server/local-server.ts';
import { CLI, call, startPythonServer, stdioTransport as stdio, streamableTransport as streamable, textOf } from '../helpers/mcp-clients.ts';

const MAKE_WHEEL = fileURLToPath(new URL('../fixtures/make_wheel.py', import.meta.url));

describe("MCP: install-python-packages installs into the REPL's own environment, and nowhere else", { timeout: 300_000 }, () => {
  let server: LocalServer;
  let stopServer: () => Promise<void>;
  let dir: string;
  const PIP_ENV = { PIP_NO_INDEX: '1', PIP_FIND_LINKS: '' };
  const venvPython = () => join(dir, 'venv', 'bin', 'python');

  before(async () => {
    // The person's own environment is a venv of the test's; pip finds wheels built here, offline.
    dir = await mkdtemp(join(tmpdir(), 'perennial-install-'));
    execFileSync('python3', ['-m', 'venv', join(dir, 'venv')]);
    for (let i = 0; i < 5; i++)
      execFileSync('python3', [MAKE_WHEEL, dir, `tinypkg${i}`, '1.0', JSON.stringify({ [`tinypkg${i}/__init__.py`]: `VALUE = ${i}\n` })]);
    Object.assign(process.env, { ...PIP_ENV, PIP_FIND_LINKS: dir });
    ({ server, stop: stopServer } = await startPythonServer(venvPython()));
  });
  after(async () => {
    await stopServer();
    for (const name of Object.keys(PIP_ENV)) delete process.env[name];
    await rm(dir, { recursive: true, force: true });
  });

  const eras: Array<[string, (server: LocalServer) => Transport, VersionNegotiationMode]> = [
    ['stdio, 2025-11-25', stdio, 'legacy'],
    ['stdio, 2026-07-28', stdio, { pin: '2026-07-28' }],
    ['HTTP, 2025-11-25 session', streamable, 'legacy'],
    ['HTTP, 2026-07-28', streamable, 'auto'],
  ];
  eras.forEach(([name, transport, mode], i) => {
    it(`over ${name}: without a question, even to a client that could ask`, async () => {
      const client = new Client({ name: 'perennial-tests', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } });
      client.setRequestHandler('elicitation/create', () => assert.fail('nothing of the person changes: nothing to ask'));
      await client.connect(transport(server));
      try {
        const replId = ((await call(client, 'create-python-repl', {})).structuredContent as { replId: string }).replId;
        const pkg = `tinypkg${i}`;
        const installed = await call(client, 'install-python-packages', { replId, packages: [pkg] });
        assert.equal(textOf(installed), `Installed: Successfully installed ${pkg}-1.0`);
        assert.equal(
          ((await call(client, 'run-python-in-repl', { replId, pythonCode: `import ${pkg}\n${pkg}.VALUE` })).structuredContent as { value: string }).value,
          String(i),
        );
        assert.throws(() => execFileSync(venvPython(), ['-c', `import ${pkg}`], { stdio: 'pipe' }), `${pkg} is not in the person's venv`);
        const { tools } = await client.listTools();
        assert.equal(tools.find((t) => t.name === 'install-python-packages')!.annotations?.destructiveHint, false);
      } finally {
        await client.close();
      }
    });
  });

  it('`perennial install NAME PKG...` installs there too, also wheels, -r FILE and -f DIR from the current folder; it says what is wrong, and when there is no network', async () => {
    // Not spawnSync: the server answers from this process.
    const perennial = (...args: string[]) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [CLI, '--data-dir', server.manager.dataDir, ...args], { cwd: dir });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d));
        child.stderr.on('data', (d: Buffer) => (stderr += d));
        child.on('close', (status) => resolve({ status, stdout, stderr }));
      });
    const replId = (await perennial('machine', 'new', '--engine', 'python')).stdout.trim();
    const installed = await perennial('install', replId, 'tinypkg4');
    assert.equal(installed.stdout, 'Successfully installed tinypkg4-1.0\n', installed.stderr);
    assert.equal((await perennial('exec', '-m', replId, 'import tinypkg4\ntinypkg4.VALUE')).stdout, '4\n');
    assert.throws(() => execFileSync(venvPython(), ['-c', 'import tinypkg4'], { stdio: 'pipe' }));
    const option = await perennial('install', replId, '--index-url=http://elsewhere');
    assert.equal(option.status, 1);
    assert.match(option.stderr, /unknown option '--index-url=http:\/\/elsewhere'/);
    const missing = await perennial('install', replId, 'nosuchpkg');
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /^perennial: pip install failed \(exit 1\): .*No matching distribution found for nosuchpkg/s);

    // Files and folders from where the command runs (not the machine's folder, nor pip's find-links).
    for (const folder of ['local', 'wheels']) await mkdir(join(dir, folder));
    execFileSync('python3', [MAKE_WHEEL, join(dir, 'local'), 'wheelpkg', '1.0', JSON.stringify({ 'wheelpkg/__init__.py': 'VALUE = 21\n' })]);
    execFileSync('python3', [MAKE_WHEEL, join(dir, 'wheels'), 'linkedpkg', '1.0', JSON.stringify({ 'linkedpkg/__init__.py': 'VALUE = 22\n' })]);
    writeFileSync(join(dir, 'requirements.txt'), 'tinypkg2\n');
    const wheel = await perennial('install', replId, './local/wheelpkg-1.0-py3-none-any.whl');
    assert.equal(wheel.stdout, 'Successfully installed wheelpkg-1.0\n', wheel.stderr);
    const listed = await perennial('install', replId, 'linkedpkg', '-r', 'requirements.txt', '--find-links', 'wheels');
    assert.equal(listed.stdout, 'Successfully installed linkedpkg-1.0 tinypkg2-1.0\n', listed.stderr);
    assert.equal(
      (await perennial('exec', '-m', replId, 'import wheelpkg, linkedpkg, tinypkg2\n(wheelpkg.VALUE, linkedpkg.VALUE, tinypkg2.VALUE)')).stdout,
      '(21, 22, 2)\n',
    );
    assert.equal((await perennial('install', replId)).stderr, 'perennial install: name the packages to install, or a requirements file (-r FILE)\n');

    // An index that cannot be reached: one line, not pip's retries.
    delete process.env.PIP_NO_INDEX;
    Object.assign(process.env, { PIP_INDEX_URL: 'http://127.0.0.1:9/simple', PIP_RETRIES: '1' });
    try {
      const offline = await perennial('install', replId, 'unreachablepkg');
      assert.equal(offline.status, 1);
      assert.equal(offline.stderr, 'perennial: no network to the package index: install from a wheel file or a folder of wheels (--find-links)\n');
    } finally {
      delete process.env.PIP_INDEX_URL;
      delete process.env.PIP_RETRIES;
      process.env.PIP_NO_INDEX = '1';
    }
  });
});
