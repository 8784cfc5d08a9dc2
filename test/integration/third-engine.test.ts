/**
 * A third engine is a folder under src/engines/ and a line in each of the engines' two registries
 * (descriptors.ts: what it is, which every layer reads; index.ts: how it runs for a data dir):
 * nothing else in Perennial changes. Proved on a copy of this tree, built: a stub engine (the
 * tests' fake, whose "Python" is a line language) gets its folder and those two lines, and its
 * machines are made, run, swapped, forked and listed through the built CLI and MCP.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { finished, type CliRun } from '../helpers/processes.ts';
import { call, textOf } from '../helpers/mcp-clients.ts';
import { tempDataDir } from '../helpers/machines.ts';
import { stopLocalServer } from '../../src/client/local-server-connection.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('a third engine: a folder, and a line in each of the two registries', { timeout: 300_000 }, () => {
  let tree: string;
  let dataDir: string;
  let cleanup: () => Promise<void>;
  const cli = (args: string[]): Promise<CliRun> => {
    const child = spawn(process.execPath, [join(tree, 'dist', 'cli.js'), '--data-dir', dataDir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    return finished(child);
  };
  const must = async (args: string[]): Promise<string> => {
    const run = await cli(args);
    assert.equal(run.code, 0, `perennial ${args.join(' ')}: ${run.stderr}`);
    return run.stdout.trim();
  };

  before(async () => {
    ({ dir: tree, cleanup } = await tempDataDir({ empty: true }));
    dataDir = join(tree, 'data');
    for (const part of ['src', 'scripts', 'package.json', 'tsconfig.json']) cpSync(join(ROOT, part), join(tree, part), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'), 'dir');
    // The sandbox's base image, which the build ships, is this build's: the copy's is the same.
    mkdirSync(join(tree, 'dist', 'sandbox'), { recursive: true });
    for (const base of readdirSync(join(ROOT, 'dist', 'sandbox')).filter((name) => name.endsWith('.image')))
      cpSync(join(ROOT, 'dist', 'sandbox', base), join(tree, 'dist', 'sandbox', base));

    // The folder: the engine, and its descriptor.
    const folder = join(tree, 'src', 'engines', 'stub');
    mkdirSync(folder);
    writeFileSync(
      join(folder, 'stub-engine.ts'),
      readFileSync(join(ROOT, 'test', 'helpers', 'fake-engine.ts'), 'utf8')
        .replaceAll("'../../src/", "'../../")
        .replace("readonly name = 'python';", "readonly name = 'stub';"),
    );
    writeFileSync(
      join(folder, 'descriptor.ts'),
      [
        "import type { EngineDescriptor } from '../descriptor.ts';",
        '',
        'export const stubDescriptor = {',
        "  name: 'stub',",
        "  summary: 'a stub: variables as JSON, a line at a time',",
        "  snapshotMagic: '{',",
        '  defaultMemoryMb: 64,',
        '  filesBesideSnapshot: false,',
        '  confined: false,',
        '  takes: { python: false, network: false, workspace: false },',
        '} as const satisfies EngineDescriptor;',
        '',
      ].join('\n'),
    );
    writeFileSync(
      join(folder, 'stub-in-data-dir.ts'),
      [
        "import type { EngineRuntime } from '../engine-runtime.ts';",
        "import { stubDescriptor } from './descriptor.ts';",
        "import { FakeEngine } from './stub-engine.ts';",
        '',
        'export function stubInDataDir(): EngineRuntime {',
        '  return {',
        '    name: stubDescriptor.name,',
        '    factory: (options) => new FakeEngine(options, {}),',
        "    status: () => ({ name: stubDescriptor.name, available: true, detail: 'a stub, in memory', warning: null, ready: 0 }),",
        '    newestRuntime: () => undefined,',
        '    snapshotRuntime: async () => undefined,',
        '    assertStartable: async () => {},',
        '    prewarm: () => {},',
        '    close: async () => {},',
        '  };',
        '}',
        '',
      ].join('\n'),
    );
    // A line in each registry (and the import it needs).
    const register = (file: string, list: RegExp, entry: string, from: string) => {
      const path = join(tree, 'src', 'engines', file);
      const text = readFileSync(path, 'utf8');
      assert.match(text, list, `${file} has its list`);
      writeFileSync(path, `import { ${entry} } from '${from}';\n${text.replace(list, (found) => found.replace(/\]/, `, ${entry}]`))}`);
    };
    register('descriptors.ts', /export const ENGINES = \[[^\]]*\]/, 'stubDescriptor', './stub/descriptor.ts');
    register('index.ts', /const IN_DATA_DIR.* = \[[^\]]*\]/, 'stubInDataDir', './stub/stub-in-data-dir.ts');
    execFileSync(process.execPath, [join(tree, 'scripts', 'build.mjs')], { cwd: tree, stdio: 'pipe' });
  });

  after(async () => {
    await stopLocalServer(dataDir);
    await cleanup();
  });

  it('its machines are made, run, swapped, forked and listed through the CLI, which lists the engine too', async () => {
    const name = await must(['machine', 'new', '--engine', 'stub', '--name', 'third']);
    assert.equal(name, 'third');
    await must(['exec', '-m', name, 'answer = 41']);
    assert.equal(await must(['exec', '-m', name, 'answer']), '41');
    await must(['machine', 'swap', name]);
    assert.equal(await must(['exec', '-m', name, 'answer']), '41', 'back from its snapshot');
    const fork = await must(['machine', 'fork', name]);
    assert.equal(await must(['exec', '-m', fork, 'answer']), '41', 'the fork has its state');
    const listed = JSON.parse(await must(['machine', 'list', '--json'])) as Array<{ name: string; engine: string }>;
    assert.deepEqual(
      listed.map((m) => [m.name, m.engine]).sort(),
      [
        [fork, 'stub'],
        [name, 'stub'],
      ].sort(),
    );
    const refused = await cli(['machine', 'new', '--engine', 'ruby']);
    assert.match(refused.stderr, /Allowed choices are sandbox, python, stub/);
    const status = JSON.parse(await must(['status', '--json'])) as { engines: Array<{ name: string; detail: string }> };
    assert.deepEqual(status.engines.at(-1), { ...status.engines.at(-1), name: 'stub', detail: 'a stub, in memory' });
  });

  it('and through MCP: made with the engine, run, listed', async () => {
    const client = new Client({ name: 'third-engine-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [join(tree, 'dist', 'cli.js'), '--data-dir', dataDir, 'mcp'], stderr: 'pipe' }),
    );
    try {
      const { tools } = await client.listTools();
      const create = tools.find((tool) => tool.name === 'create-python-repl')!;
      assert.match(JSON.stringify(create.inputSchema), /stub \(a stub: variables as JSON, a line at a time\)/, 'its summary, for the agent');
      const made = await call(client, 'create-python-repl', { engine: 'stub', name: 'over-mcp' });
      assert.equal(made.isError, undefined, textOf(made));
      await call(client, 'run-python-in-repl', { replId: 'over-mcp', pythonCode: 'seen = "over MCP"' });
      assert.match(textOf(await call(client, 'run-python-in-repl', { replId: 'over-mcp', pythonCode: 'seen' })), /over MCP/);
      const listed = textOf(await call(client, 'list-python-repls', {}));
      assert.match(listed, /over-mcp/);
      assert.match(listed, /stub/);
    } finally {
      await client.close();
    }
  });
});
