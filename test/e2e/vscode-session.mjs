// A real VS Code for tests: code-server on a fresh state (user data, extensions, HOME, XDG dirs),
// in its own process group on a free loopback port, and headless Chromium to open its workbench.
// Used by run-vscode.mjs (the suite), check-vsix.mjs (the installed package) and run-desktop.mjs.
import { spawn, execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';

/**
 * The suite's own extensions, folders of test/e2e: a chat participant with a scripted model (VS
 * Code's chat needs one), and a stand-in for the Python extension's interpreter API.
 */
export const TEST_EXTENSIONS = ['chat-host', 'python-host'];

/**
 * The suite, bundled as the extension host runs it: CommonJS, with mocha a package it loads from
 * here. Answers its folder, whose `index.cjs` is the tests' entry.
 */
export async function buildSuite(root) {
  const suiteDir = join(root, '.cache/e2e/suite');
  await build({
    entryPoints: { index: join(root, 'test/e2e/suite/index.ts') },
    outdir: suiteDir,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode', 'mocha'],
    logLevel: 'warning',
  });
  return suiteDir;
}

export function codeServerPaths() {
  const { CS_NODE, CS_ENTRY } = process.env;
  if (!CS_NODE || !CS_ENTRY) {
    console.error('set CS_NODE and CS_ENTRY (printed by test/e2e/setup-vscode.sh)');
    process.exit(2);
  }
  return { node: CS_NODE, entry: CS_ENTRY };
}

/** A fresh state folder and the environment VS Code (and the servers it starts) runs with. */
export function freshState(extraEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'perennial-e2e-'));
  const workspace = join(dir, 'workspace');
  for (const sub of ['data/User', 'home', 'extensions', 'tmp', 'xdg-data']) mkdirSync(join(dir, sub), { recursive: true });
  mkdirSync(workspace);
  writeFileSync(
    join(dir, 'data/User/settings.json'),
    JSON.stringify({
      'workbench.startupEditor': 'none',
      'security.workspace.trust.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'update.mode': 'none',
    }),
  );
  const env = {
    ...process.env,
    HOME: join(dir, 'home'), // must exist: VS Code starts stdio MCP servers in it
    TMPDIR: join(dir, 'tmp'),
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'xdg-data'), // the extension's Perennial data dir goes below it
    XDG_CACHE_HOME: join(dir, 'cache'),
    // python-engine machines use Debian's Python, which has matplotlib (scripts/test-deps.sh).
    PERENNIAL_PYTHON: '/usr/bin/python3',
    ...extraEnv,
  };
  return { dir, workspace, env, perennialDataDir: join(dir, 'xdg-data', 'perennial') };
}

/** `code-server --install-extension`, into the state's extensions folder. */
export function installExtension(state, vsix) {
  const { node, entry } = codeServerPaths();
  execFileSync(node, [entry, '--user-data-dir', join(state.dir, 'data'), '--extensions-dir', join(state.dir, 'extensions'), '--install-extension', vsix], {
    env: state.env,
    stdio: 'inherit',
  });
}

async function freePort() {
  return new Promise((done) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
}

/** Starts code-server on `state` (with the smoke-test driver, which honours a test payload). */
export async function startCodeServer(state) {
  const { node, entry } = codeServerPaths();
  const port = await freePort();
  const server = spawn(
    node,
    [
      entry,
      '--vscode-option',
      'enable-smoke-test-driver',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--user-data-dir',
      join(state.dir, 'data'),
      '--extensions-dir',
      join(state.dir, 'extensions'),
      state.workspace,
    ],
    { env: state.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const kill = () => {
    try {
      process.kill(-server.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  process.on('exit', kill);
  const log = createWriteStream(join(state.dir, 'code-server.log'));
  server.stdout.pipe(log);
  server.stderr.pipe(log);
  await new Promise((done, fail) => {
    const listening = (data) => /HTTP server listening/.test(data) && done();
    server.stdout.on('data', listening);
    server.stderr.on('data', listening);
    server.once('exit', (code) => fail(new Error(`code-server exited (${code}); see ${state.dir}/code-server.log`)));
  });
  return { authority: `127.0.0.1:${port}`, kill };
}

export function launchChromium(state) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    env: { ...process.env, HOME: join(state.dir, 'home') },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-dev-shm-usage',
    ],
  });
}

/** The extension started a Perennial server of its own (detached): stop it, and wait until it let go. */
export async function stopPerennialServer(state) {
  const infoPath = join(state.perennialDataDir, 'server.json');
  if (!existsSync(infoPath)) return;
  const { pid, url, token } = JSON.parse(readFileSync(infoPath, 'utf8'));
  // Asked as `perennial stop` asks it: a signal would end it unsaved on Windows.
  const asked = await fetch(`${url}/v1/server/stop`, { method: 'POST', headers: { authorization: `Bearer ${token}` } }).then(
    (response) => response.ok,
    () => false,
  );
  if (!asked) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      return;
    }
  }
  const deadline = Date.now() + 15_000;
  while (existsSync(infoPath) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (existsSync(infoPath)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

export function removeState(state) {
  rmSync(state.dir, { recursive: true, force: true });
}
