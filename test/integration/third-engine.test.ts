/**
 * A third engine is a folder under src/engines/ and a line in each of the engines' two registries
 * (descriptors.ts: what it is; index.ts: how it starts): nothing else in Perennial changes. Proved
 * on a copy of this tree, built: a stub engine (the tests' fake, whose "Python" is a line language)
 * gets its folder and those two lines, and its machines are made, run, swapped, forked and listed
 * through the built CLI and MCP.
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

/** `text` with `line` put after the line that matches `anchor`, which must be there once. */
function withLineAfter(text: string, anchor: RegExp, line: string): string {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => anchor.test(l));
  assert.ok(at >= 0 && lines.findIndex((l, i) => i > at && anchor.test(l)) < 0, `one line matches ${anchor}`);
  lines.splice(at + 1, 0, line);
  return lines.join('\n');
}

describe('a third engine: a folder and a line in each registry', { timeout: 300_000 }, () => {
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
        '  takes: { python: false, network: false, workspace: false },',
        '} as const satisfies EngineDescriptor;',
        '',
      ].join('\n'),
    );
    // A line in each registry (and the imports they need).
    const descriptors = join(tree, 'src', 'engines', 'descriptors.ts');
    let registry = readFileSync(descriptors, 'utf8').replace(
      /export const ENGINES = \[(.*)\] as const;/,
      'export const ENGINES = [$1, stubDescriptor] as const;',
    );
    registry = `import { stubDescriptor } from './stub/descriptor.ts';\n${registry}`;
    writeFileSync(descriptors, registry);
    const index = join(tree, 'src', 'engines', 'index.ts');
    let factories = withLineAfter(readFileSync(index, 'utf8'), /^ {4}factories: \{$/, '      stub: (engineOptions) => new FakeEngine(engineOptions, {}),');
    factories = `import { FakeEngine } from './stub/stub-engine.ts';\n${factories}`;
    writeFileSync(index, factories);
    execFileSync(process.execPath, [join(tree, 'scripts', 'build.mjs')], { cwd: tree, stdio: 'pipe' });
  });

  after(async () => {
    await stopLocalServer(dataDir);
    await cleanup();
  });

  it('its machines are made, run, swapped, forked and listed through the CLI', async () => {
    const name = await must(['machine', 'new', '--engine', 'stub', '--name', 'third']);
    assert.equal(name, 'third');
    await must(['exec', '-m', name, 'answer = 41']);
    assert.equal(await must(['exec', '-m', name, 'answer']), '41');
    await must(['machine', 'swap', name]);
    assert.equal(await must(['exec', '-m', name, 'answer']), '41', 'back from its snapshot');
    const fork = await must(['machine', 'fork', name]);
    assert.equal(await must(['exec', '-m', fork, 'answer']), '41', 'the fork has its state');
    const listed = JSON.parse(await must(['machine', 'list', '--json'])) as Array<{ name: string; engine: string }>;
    assert.deepEqual(listed.map((m) => [m.name, m.engine]).sort(), [
      [fork, 'stub'],
      [name, 'stub'],
    ]);
    const refused = await cli(['machine', 'new', '--engine', 'ruby']);
    assert.match(refused.stderr, /Allowed choices are sandbox, python, stub/);
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
