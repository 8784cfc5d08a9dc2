// Runs the extension's end-to-end suite inside a real VS Code: code-server with the workbench
// opened in headless Chromium. The workbench takes the extension under development and the test
// suite from the URL's `payload` (honoured with VS Code's smoke-test driver flag), runs the suite
// in its Node extension host, and reports the exit code through `window.codeAutomationExit`.
//
// Env: CS_NODE and CS_ENTRY (from setup-vscode.sh); SHOT_DIR (screenshots, default
// .cache/e2e/screenshots); CHROMIUM (default /usr/bin/chromium); E2E_TIMEOUT_MS (default 600000);
// KEEP_STATE=1 keeps the temporary VS Code state even when the suite passes.
// A test asks for a screenshot with console.log('@@screenshot:<name>'); the file appears as
// $SHOT_DIR/<name>.png. It acts on the page with console.log('@@ui:<id>:<json>'); see uiAction.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { format } from 'node:util';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';

const root = resolve(new URL('../..', import.meta.url).pathname);
const { CS_NODE, CS_ENTRY } = process.env;
if (!CS_NODE || !CS_ENTRY) {
  console.error('set CS_NODE and CS_ENTRY (printed by test/e2e/setup-vscode.sh)');
  process.exit(2);
}
const shotDir = resolve(process.env.SHOT_DIR || join(root, '.cache/e2e/screenshots'));
const timeoutMs = Number(process.env.E2E_TIMEOUT_MS || 600_000);
const started = Date.now();
const say = (...args) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...args);

// The suite runs in the extension host as CommonJS; mocha stays a package it loads from here.
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

const state = mkdtempSync(join(tmpdir(), 'perennial-e2e-'));
const workspace = join(state, 'workspace');
for (const dir of ['data/User', 'home', 'extensions', 'tmp', 'xdg-data', workspace]) mkdirSync(resolve(state, dir), { recursive: true });
mkdirSync(shotDir, { recursive: true });
writeFileSync(
  join(state, 'data/User/settings.json'),
  JSON.stringify({
    'workbench.startupEditor': 'none',
    'security.workspace.trust.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
  }),
);
const results = join(state, 'results.json');
const uiDir = join(state, 'ui');
mkdirSync(uiDir);
const dataHome = join(state, 'xdg-data');
const env = {
  ...process.env,
  HOME: join(state, 'home'), // must exist: VS Code starts stdio MCP servers in it
  TMPDIR: join(state, 'tmp'),
  XDG_CONFIG_HOME: join(state, 'config'),
  XDG_DATA_HOME: dataHome, // the extension's Perennial data dir goes below it
  XDG_CACHE_HOME: join(state, 'cache'),
  PERENNIAL_E2E_RESULTS: results,
  PERENNIAL_E2E_SHOTS: shotDir,
  PERENNIAL_E2E_WORKSPACE: workspace,
  PERENNIAL_E2E_UI: uiDir,
  // python-engine machines use Debian's Python, which has matplotlib (scripts/test-deps.sh).
  PERENNIAL_PYTHON: '/usr/bin/python3',
};

const port = await new Promise((done) => {
  const probe = createServer();
  probe.listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => done(free));
  });
});
const server = spawn(
  CS_NODE,
  [
    CS_ENTRY,
    '--vscode-option', 'enable-smoke-test-driver',
    '--bind-addr', `127.0.0.1:${port}`,
    '--auth', 'none',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--user-data-dir', join(state, 'data'),
    '--extensions-dir', join(state, 'extensions'),
    workspace,
  ],
  { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
);
const killServer = () => {
  try {
    process.kill(-server.pid, 'SIGKILL');
  } catch {
    // already gone
  }
};
process.on('exit', killServer);
const serverLog = createWriteStream(join(state, 'code-server.log'));
server.stdout.pipe(serverLog);
server.stderr.pipe(serverLog);
await new Promise((done, fail) => {
  const listening = (data) => /HTTP server listening/.test(data) && done();
  server.stdout.on('data', listening);
  server.stderr.on('data', listening);
  server.once('exit', (code) => fail(new Error(`code-server exited (${code}); see ${state}/code-server.log`)));
});
say(`code-server on 127.0.0.1:${port}, state in ${state}`);

/** Webviews fill in a few seconds after their panel appears: wait for text before a screenshot. */
async function webviewsReady(page) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const outers = page.frames().filter((frame) => frame.url().includes('/webview/browser/pre/index.html'));
    const texts = await Promise.all(outers.map((outer) => outer.childFrames()[0]?.evaluate(() => globalThis.document?.body?.innerText ?? '').catch(() => '') ?? ''));
    if (texts.every((text) => text.trim())) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/**
 * What a test asks of the workbench's page (the extension host cannot see it): click an element,
 * read the text of elements. The answer goes to $PERENNIAL_E2E_UI/<id>.json, which the test polls.
 */
async function uiAction(page, { click, text }) {
  try {
    if (click) await page.locator(click).first().click({ timeout: 10_000 });
    // Text is read in every frame: webviews live in nested iframes.
    const texts = text ? await Promise.all(page.frames().map((frame) => frame.locator(text).allInnerTexts().catch(() => []))) : [];
    return { ok: true, text: texts.flat() };
  } catch (error) {
    return { ok: false, error: error.message };
  }
}

const authority = `127.0.0.1:${port}`;
const payload = [
  ['extensionDevelopmentPath', `vscode-remote://${authority}${root}`],
  ['extensionTestsPath', `vscode-remote://${authority}${join(suiteDir, 'index.cjs')}`],
];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  env: { ...process.env, HOME: join(state, 'home') },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
});
let exitCode;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 850 } });
  // Offline noise of the workbench (gallery, GitHub auth) is not the suite's business.
  const noise = /open-vsx|ERR_NAME_NOT_RESOLVED|status of 404|authentication provider 'github'|getaddrinfo|Failed to fetch/;
  page.on('console', (message) => {
    if (message.type() === 'error' && !noise.test(message.text())) console.log('[workbench]', message.text().slice(0, 300));
  });
  let finish;
  const finished = new Promise((done) => (finish = done));
  await page.exposeFunction('codeAutomationLog', async (_type, args) => {
    const text = format(...(args ?? []));
    const ui = /^@@ui:([\w.-]+):(.*)$/s.exec(text);
    if (ui) {
      writeFileSync(join(uiDir, `${ui[1]}.json`), JSON.stringify(await uiAction(page, JSON.parse(ui[2]))));
      return;
    }
    const shot = /@@screenshot:([\w.-]+)/.exec(text);
    if (shot) {
      if (!(await webviewsReady(page))) say('webview content was not ready after 10 s');
      const file = join(shotDir, `${shot[1]}.png`);
      await page.screenshot({ path: `${file}.part.png` });
      renameSync(`${file}.part.png`, file);
      say('screenshot', file);
      return;
    }
    if (!/^\[(ChatModelSelection|AgentHost|AgentHost:remote|AccountPolicyGate)\]|open-vsx\.org|^(Resolving|Resolved) connection token|^Creating a socket/.test(text)) console.log(text);
  });
  await page.exposeFunction('codeAutomationExit', async (code) => finish(code));
  await page.goto(`http://${authority}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
  const code = await Promise.race([finished, new Promise((done) => setTimeout(() => done('timeout'), timeoutMs).unref())]);
  await page.screenshot({ path: join(shotDir, 'final.png') }).catch(() => {});
  exitCode = code === 'timeout' ? 2 : code;
  say('the extension host finished with', code);
} finally {
  await browser.close();
  killServer();
  await stopPerennialServer(join(dataHome, 'perennial'));
}

/** The extension started a Perennial server of its own (detached): stop it, and wait until it let go. */
async function stopPerennialServer(dataDir) {
  const infoPath = join(dataDir, 'server.json');
  if (!existsSync(infoPath)) return;
  const { pid } = JSON.parse(readFileSync(infoPath, 'utf8'));
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
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

if (existsSync(results)) {
  const { tests } = JSON.parse(readFileSync(results, 'utf8'));
  const failed = tests.filter((test) => test.state !== 'passed');
  for (const test of failed) console.log(`  failed: ${test.title}${test.error ? `\n    ${test.error}` : ''}`);
  console.log(`${tests.length - failed.length} passed, ${failed.length} failed`);
  if (failed.length) exitCode ||= 1;
} else {
  console.log('the suite reported nothing (it crashed or timed out)');
  exitCode ||= 1;
}
if (exitCode === 0 && !process.env.KEEP_STATE) rmSync(state, { recursive: true, force: true });
else say(`kept ${state} (code-server.log, data/logs) for inspection`);
process.exit(exitCode);
