import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CURRENT_PYODIDE } from '../../src/engines/sandbox/pyodide-runtimes.ts';
import { isProcessAlive } from '../../src/platform/process-liveness.ts';
import { readServerInfo } from '../../src/platform/server-info.ts';
import { TEST_PYTHON } from '../helpers/machines.ts';
import { node22Tool } from '../helpers/node22-tools.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INSPECTOR_VERSION = '2.12.0';
const CLAUDE_CODE_VERSION = '2.1.330';
/** What the package must hold: what `perennial` runs, and the files npm always adds. */
const KERNEL_MODULES = readdirSync(join(ROOT, 'src/kernel/perennial_kernel')).filter((name) => name.endsWith('.py'));
const SHIPPED = [
  'CHANGELOG.md',
  'LICENSE',
  'README.md',
  'dist/cli.js',
  ...KERNEL_MODULES.map((name) => `dist/perennial_kernel/${name}`),
  'dist/sandbox/main.js',
  'dist/sandbox/patch-thread.js',
  'dist/view/machine.html',
  'package.json',
].sort();

/** The `sh` blocks of a document's section, in order. */
function shellBlocks(markdown: string, heading: string): string[] {
  const section = markdown.slice(markdown.indexOf(heading)).split(/\n## /)[0]!;
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

const npm = (args: string[], cwd: string) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * The package as a user gets it: packed from a clean copy of the sources (so `prepack` must build
 * it), installed globally into a temporary prefix, and run as an MCP server by the MCP Inspector's
 * CLI, an MCP client of its own that drives a server from the command line.
 */
describe('the npm package', { timeout: 600_000 }, () => {
  let work: string;
  let tarball: string;
  let packed: string[];
  let installed: string;
  let dataDir: string;
  let inspector: { node: string; cli: string };

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'perennial-npm-'));
    // A clean clone: the committed and new sources, no dist/, the project's node_modules for the build.
    const clone = join(work, 'clone');
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter(Boolean);
    for (const file of files.filter((f) => existsSync(join(ROOT, f)))) {
      mkdirSync(dirname(join(clone, file)), { recursive: true });
      // A committed link stays a link (Node 22's cpSync refuses a link to a folder without recursion).
      if (lstatSync(join(ROOT, file)).isSymbolicLink()) symlinkSync(readlinkSync(join(ROOT, file)), join(clone, file));
      else cpSync(join(ROOT, file), join(clone, file));
    }
    symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'));
    const [report] = JSON.parse(npm(['pack', '--json', '--pack-destination', work], clone)) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = join(work, report!.filename);
    packed = report!.files.map((f) => f.path).sort();
    installed = join(work, 'prefix');
    npm(['install', '--global', '--prefix', installed, tarball], work);
    dataDir = join(work, 'data');
    const tool = node22Tool('inspector', '@modelcontextprotocol/inspector', INSPECTOR_VERSION);
    const bin = (JSON.parse(readFileSync(join(tool.packageDir, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin;
    inspector = { node: tool.node, cli: join(tool.packageDir, Object.values(bin)[0]!) };
  });

  after(async () => {
    // `perennial mcp` started a local server of its own in the data dir: stop it.
    const info = dataDir ? await readServerInfo(dataDir).catch(() => null) : null;
    if (info && isProcessAlive(info.pid)) process.kill(info.pid, 'SIGTERM');
    for (let i = 0; info && i < 100 && isProcessAlive(info.pid); i++) await new Promise((r) => setTimeout(r, 100));
    await rm(work, { recursive: true, force: true });
  });

  /** The Inspector's CLI against the installed `perennial mcp` over stdio; its JSON answer. */
  function inspect(...args: string[]): { status: number | null; result: Record<string, unknown> | undefined; stderr: string } {
    return inspectTarget(['-e', `PERENNIAL_HOME=${dataDir}`, '-e', `PERENNIAL_PYTHON=${TEST_PYTHON}`, join(installed, 'bin/perennial'), 'mcp'], args);
  }

  function inspectTarget(target: string[], args: string[]): { status: number | null; result: Record<string, unknown> | undefined; stderr: string } {
    const run = spawnSync(inspector.node, [inspector.cli, '--cli', '--format', 'json', '-q', ...target, ...args], { encoding: 'utf8', timeout: 120_000 });
    const result = run.stdout.trim() ? ((JSON.parse(run.stdout) as { result?: Record<string, unknown> }).result ?? undefined) : undefined;
    return { status: run.status, result, stderr: run.stderr };
  }

  it('ships only what runs', () => {
    // The CLI's chunks are named by their content: the code a cluster node alone loads is one of them.
    const chunks = packed.filter((path) => path.startsWith('dist/cli-'));
    // The sandbox's base image, named by the Pyodide build and what makes the base (kernel, sandbox process).
    const bases = packed.filter((path) => path.startsWith('dist/sandbox/base-'));
    assert.deepEqual(
      packed.filter((path) => !chunks.includes(path) && !bases.includes(path)),
      SHIPPED,
    );
    assert.equal(bases.length, 1, bases.join(', '));
    assert.match(bases[0]!, new RegExp(`^dist/sandbox/base-${CURRENT_PYODIDE.version.replaceAll('.', '\\.')}-\\w{16}\\.image$`));
    assert.ok(chunks.length > 0 && chunks.every((path) => /^dist\/cli-[\w-]+\.js$/.test(path)), chunks.join(', '));
    assert.ok(chunks.some((path) => path.startsWith('dist/cli-cluster-node-')));
  });

  it('installs with a working `perennial` command', () => {
    const version = execFileSync(join(installed, 'bin/perennial'), ['--version'], { encoding: 'utf8' }).trim();
    assert.equal(version, (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });

  it('serves MCP over stdio to the Inspector: tools/list, tools/call, resources/templates/list, prompts/list', () => {
    const listed = inspect('--method', 'tools/list');
    assert.equal(listed.status, 0, listed.stderr);
    const names = (listed.result!.tools as Array<{ name: string }>).map((t) => t.name);
    for (const name of ['create-python-repl', 'run-python-in-repl']) assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);
    const created = inspect('--method', 'tools/call', '--tool-name', 'create-python-repl', '--tool-args-json', JSON.stringify({ engine: 'python' }));
    assert.equal(created.status, 0, created.stderr);
    const replId = (created.result!.structuredContent as { replId: string }).replId;
    const ran = inspect(
      '--method',
      'tools/call',
      '--tool-name',
      'run-python-in-repl',
      '--tool-args-json',
      JSON.stringify({ replId, pythonCode: 'import sys\nsys.version_info[0] * 20 + 2' }),
    );
    assert.equal(ran.status, 0, ran.stderr);
    assert.equal((ran.result!.structuredContent as { value: string }).value, '62');
    const templates = inspect('--method', 'resources/templates/list');
    assert.equal(templates.status, 0, templates.stderr);
    assert.ok(
      (templates.result!.resourceTemplates as Array<{ uriTemplate: string }>).some((t) => t.uriTemplate === 'perennial://machines/{replId}/files/{+path}'),
    );
    // The MCP App view, read from beside the installed bundle.
    const view = inspect('--method', 'resources/read', '--uri', 'ui://perennial/machine');
    assert.equal(view.status, 0, view.stderr);
    const [page] = view.result!.contents as Array<{ mimeType: string; text: string }>;
    assert.equal(page?.mimeType, 'text/html;profile=mcp-app');
    assert.match(page!.text, /^<!doctype html>.*<script>/s);
    const prompts = inspect('--method', 'prompts/list');
    assert.equal(prompts.status, 0, prompts.stderr);
    assert.ok((prompts.result!.prompts as Array<{ name: string }>).some((p) => p.name === 'resume-repl'));
  });

  it('serves MCP over Streamable HTTP to the Inspector, from the server `perennial mcp` started', async () => {
    const info = await readServerInfo(dataDir);
    assert.ok(info, 'perennial mcp started a local server in its data dir');
    const listed = inspectTarget([`${info.url}/mcp`, '--header', `Authorization: Bearer ${info.token}`], ['--method', 'tools/list']);
    assert.equal(listed.status, 0, listed.stderr);
    assert.ok((listed.result!.tools as Array<{ name: string }>).some((t) => t.name === 'run-python-in-repl'));
  });

  it("connects from Claude Code with the README's commands, over stdio and HTTP", async () => {
    const tool = node22Tool('claude-code', '@anthropic-ai/claude-code', CLAUDE_CODE_VERSION);
    const claudeBin = join(
      tool.packageDir,
      (JSON.parse(readFileSync(join(tool.packageDir, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin.claude!,
    );
    const project = join(work, 'claude-project');
    mkdirSync(project, { recursive: true });
    // Claude Code keeps its configuration under HOME; the installed `perennial` is found on PATH.
    const env = {
      ...process.env,
      HOME: join(work, 'claude-home'),
      PATH: `${join(installed, 'bin')}:${process.env.PATH}`,
      PERENNIAL_HOME: dataDir,
      PERENNIAL_PYTHON: TEST_PYTHON,
    };
    const claude = (...args: string[]) => execFileSync(claudeBin, args, { cwd: project, env, encoding: 'utf8', timeout: 120_000 });
    const info = await readServerInfo(dataDir);
    assert.ok(info, 'perennial mcp started a local server in its data dir');
    claude('mcp', 'add', 'perennial', '--', 'perennial', 'mcp');
    claude('mcp', 'add', '--transport', 'http', 'perennial-http', `${info.url}/mcp`, '--header', `Authorization: Bearer ${info.token}`);
    // `claude mcp list` connects to every configured server to check its health.
    const health = claude('mcp', 'list');
    assert.match(health, /^perennial: perennial mcp - ✔ Connected$/m, health);
    assert.match(health, new RegExp(`^perennial-http: ${info.url}/mcp \\(HTTP\\) - ✔ Connected$`, 'm'), health);
  });

  // A test of the documentation: once, on the Node line `npm test` runs, not again on each other line.
  it(
    "follows docs/cluster.md's try-out as written: PostgreSQL, s3rver, two nodes, the CLI through each, a drain",
    { skip: process.env.PERENNIAL_OTHER_NODE_LINE === '1' },
    () => {
      const [tryOut, done] = shellBlocks(readFileSync(join(ROOT, 'docs/cluster.md'), 'utf8'), '## Try it on one computer');
      // Its ports are below the range the system gives out at random, so no other test holds them.
      const folder = join(work, 'try');
      mkdirSync(join(folder, 'home'), { recursive: true });
      // PostgreSQL refuses to run as root, as the try-out says: as root, it runs as the user Debian's package made.
      const asRoot = process.getuid?.() === 0;
      if (asRoot) {
        chmodSync(work, 0o755);
        execFileSync('chmod', ['-R', 'a+rX', installed]);
        execFileSync('chown', ['-R', 'postgres:postgres', folder]);
      }
      // A person's shell: without the npm_config_* that `npm test` gives its scripts (its cache is root's).
      const shellEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
      const env = { ...shellEnv, HOME: join(folder, 'home'), PATH: `${join(installed, 'bin')}:${process.env.PATH}` };
      // The try-out stops at its first failure; the clean-up goes on past one.
      const shell = (script: string, strict = true) =>
        spawnSync(asRoot ? 'runuser' : 'bash', [...(asRoot ? ['-u', 'postgres', '--', 'bash'] : []), ...(strict ? ['-euo', 'pipefail'] : []), '-c', script], {
          cwd: folder,
          env,
          encoding: 'utf8',
          timeout: 240_000,
        });
      try {
        const run = shell(tryOut!);
        // The nodes' logs say why a step failed (one that timed out says nothing itself).
        const logs = () =>
          ['node-a.log', 'node-b.log']
            .map((log) => `${log}:\n${existsSync(join(folder, log)) ? readFileSync(join(folder, log), 'utf8').slice(-2000) : '(none)'}`)
            .join('\n');
        assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}\n${logs()}`);
        assert.match(run.stdout, /^42$/m, 'through node b, from node a');
        assert.equal(run.stdout.trim().split('\n').at(-1), '41', 'on node b, after node a drained');
        assert.match(run.stdout, /NODE/);
        assert.match(run.stdout, /try-it .*http:\/\/127\.0\.0\.1:18081/);
        assert.match(run.stdout, /cluster: postgres:\/\/perennial@127\.0\.0\.1:15432\/perennial with s3:\/\/perennial\/try/);
        assert.match(run.stderr, /has handed over its machines and stopped/);
      } finally {
        const stopped = shell(done!, false);
        assert.equal(stopped.status, 0, stopped.stderr);
      }
    },
  );

  it('runs from the tarball with npx', () => {
    const version = execFileSync('npx', ['--yes', '--prefer-offline', '--package', tarball, 'perennial', '--version'], { cwd: work, encoding: 'utf8' }).trim();
    assert.match(version, /^\d+\.\d+\.\d+/);
  });

  it('passes npm publish --dry-run', () => {
    const run = spawnSync('npm', ['publish', '--dry-run', tarball], { cwd: work, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout + run.stderr, /\+ perennial-repl@\d+\.\d+\.\d+/);
  });
});
