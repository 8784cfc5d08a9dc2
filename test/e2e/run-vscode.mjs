// Runs the extension's end-to-end suite inside a real VS Code: code-server with the workbench
// opened in headless Chromium. The workbench takes the extension under development and the test
// suite from the URL's `payload` (honoured with VS Code's smoke-test driver flag), runs the suite
// in its Node extension host, and reports the exit code through `window.codeAutomationExit`.
//
// Env: CS_NODE and CS_ENTRY (from setup-vscode.sh); SHOT_DIR (screenshots, default
// .cache/e2e/screenshots); CHROMIUM (default /usr/bin/chromium); E2E_TIMEOUT_MS (default 600000);
// KEEP_STATE=1 keeps the temporary VS Code state even when the suite passes.
// A suite that writes $PERENNIAL_E2E_RELOAD before it ends gets the window reloaded (the extension
// host restarts, as with "Developer: Reload Window"); it then runs again and finds that file as
// $PERENNIAL_E2E_RELOADED, to run what checks the reload.
// A test asks for a screenshot with console.log('@@screenshot:<name>'); the file appears as
// $SHOT_DIR/<name>.png. It acts on the page with console.log('@@ui:<id>:<json>'); see uiAction.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { format } from 'node:util';
import { execFileSync } from 'node:child_process';
import {
  buildSuite,
  codeServerPaths,
  freshState,
  installExtension,
  launchChromium,
  removeState,
  startCodeServer,
  stopPerennialServer,
  TEST_EXTENSIONS,
} from './vscode-session.mjs';

const root = resolve(new URL('../..', import.meta.url).pathname);
codeServerPaths();
const shotDir = resolve(process.env.SHOT_DIR || join(root, '.cache/e2e/screenshots'));
const timeoutMs = Number(process.env.E2E_TIMEOUT_MS || 600_000);
const started = Date.now();
const say = (...args) => console.log(`[e2e ${((Date.now() - started) / 1000).toFixed(1)}s]`, ...args);

const suiteDir = await buildSuite(root);

mkdirSync(shotDir, { recursive: true });
const state = freshState();
const results = join(state.dir, 'results.json');
const uiDir = join(state.dir, 'ui');
mkdirSync(uiDir);
const reload = join(state.dir, 'reload.json');
const reloaded = join(state.dir, 'reloaded.json');
Object.assign(state.env, {
  PERENNIAL_E2E_RESULTS: results,
  PERENNIAL_E2E_SHOTS: shotDir,
  PERENNIAL_E2E_WORKSPACE: state.workspace,
  PERENNIAL_E2E_UI: uiDir,
  PERENNIAL_E2E_RELOAD: reload,
  PERENNIAL_E2E_RELOADED: reloaded,
});
// The suite's own extensions (the chat host, the Python extension's stand-in) go in as packages:
// the workbench loaded only one of two extensions under development given in its payload.
for (const host of TEST_EXTENSIONS) {
  const vsix = join(root, `.cache/e2e/perennial-${host}.vsix`);
  execFileSync(join(root, 'node_modules/.bin/vsce'), ['package', '--allow-missing-repository', '--skip-license', '--no-dependencies', '--out', vsix], {
    cwd: join(root, 'test/e2e', host),
    stdio: 'ignore',
  });
  installExtension(state, vsix);
}
const server = await startCodeServer(state);
say(`code-server on ${server.authority}, state in ${state.dir}`);

/** Webviews fill in a few seconds after their panel appears: wait for text before a screenshot. */
async function webviewsReady(page) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const outers = page.frames().filter((frame) => frame.url().includes('/webview/browser/pre/index.html'));
    const texts = await Promise.all(
      outers.map(
        (outer) =>
          outer
            .childFrames()[0]
            ?.evaluate(() => globalThis.document?.body?.innerText ?? '')
            .catch(() => '') ?? '',
      ),
    );
    if (texts.every((text) => text.trim())) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/** How many elements match `selector` in each of the page's frames, in `page.frames()` order. */
function frameCounts(page, selector) {
  return Promise.all(
    page.frames().map((frame) =>
      frame
        .locator(selector)
        .count()
        .catch(() => 0),
    ),
  );
}

/**
 * What a test asks of the workbench's page (the extension host cannot see it): click an element (in any frame),
 * type into one and press Enter (`type: {into, text}`), press a key on the last (`press: {on, key}`),
 * read the text of elements, count elements.
 * The answer goes to $PERENNIAL_E2E_UI/<id>.json, which the test polls.
 */
async function uiAction(page, { click, dispatch, type, press, text, count }) {
  try {
    // A click event on the last match in any frame, without scrolling to it: a view a chat scrolled away.
    if (dispatch) {
      const index = (await frameCounts(page, dispatch)).findLastIndex((n) => n > 0);
      if (index < 0) throw new Error(`nothing matches ${dispatch}`);
      await page.frames()[index].locator(dispatch).last().dispatchEvent('click');
    }
    if (click) {
      // In whichever frame has it: webviews and MCP App views live in nested frames.
      const frame = page.frames()[(await frameCounts(page, click)).findIndex((n) => n > 0)] ?? page.mainFrame();
      await frame.locator(click).first().click({ timeout: 10_000 });
    }
    if (press) {
      // A key on the last match in any frame: a slider's handle in a notebook's output.
      const index = (await frameCounts(page, press.on)).findLastIndex((n) => n > 0);
      if (index < 0) throw new Error(`nothing matches ${press.on}`);
      await page.frames()[index].locator(press.on).last().press(press.key, { timeout: 10_000 });
    }
    if (type) {
      const field = page.locator(type.into).first();
      await field.fill(type.text, { timeout: 10_000 });
      await field.press('Enter');
    }
    // Read in every frame: webviews (and notebook outputs) live in nested iframes.
    const texts = text
      ? await Promise.all(
          page.frames().map((frame) =>
            frame
              .locator(text)
              .allInnerTexts()
              .catch(() => []),
          ),
        )
      : [];
    const counts = count ? await frameCounts(page, count) : [];
    return { ok: true, text: texts.flat(), count: counts.reduce((a, b) => a + b, 0) };
  } catch (error) {
    return { ok: false, error: error.message };
  }
}

const { authority } = server;
const payload = [
  ['extensionDevelopmentPath', `vscode-remote://${authority}${root}`],
  ['extensionTestsPath', `vscode-remote://${authority}${join(suiteDir, 'index.cjs')}`],
];
const browser = await launchChromium(state);
let exitCode;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 850 } });
  // Offline noise of the workbench (gallery, GitHub auth) is not the suite's business.
  const noise = /open-vsx|ERR_NAME_NOT_RESOLVED|status of 404|authentication provider 'github'|getaddrinfo|Failed to fetch/;
  page.on('console', (message) => {
    if (message.type() === 'error' && !noise.test(message.text())) console.log('[workbench]', message.text().slice(0, 300));
  });
  let finish;
  let finished = new Promise((done) => (finish = done));
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
    if (
      !/^\[(ChatModelSelection|AgentHost|AgentHost:remote|AccountPolicyGate)\]|open-vsx\.org|^(Resolving|Resolved) connection token|^Creating a socket/.test(
        text,
      )
    )
      console.log(text);
  });
  await page.exposeFunction('codeAutomationExit', async (code) => finish(code));
  await page.goto(`http://${authority}/?folder=${encodeURIComponent(state.workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
  const deadline = new Promise((done) => setTimeout(() => done('timeout'), timeoutMs).unref());
  let code = await Promise.race([finished, deadline]);
  if (code !== 'timeout' && existsSync(reload)) {
    say('the suite asked for a window reload');
    renameSync(reload, reloaded);
    finished = new Promise((done) => (finish = done));
    await page.reload();
    const next = await Promise.race([finished, deadline]);
    code = next === 'timeout' ? next : Math.max(code, next);
  }
  await page.screenshot({ path: join(shotDir, 'final.png') }).catch(() => {});
  exitCode = code === 'timeout' ? 2 : code;
  say('the extension host finished with', code);
} finally {
  await browser.close();
  server.kill();
  await stopPerennialServer(state);
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
if (exitCode === 0 && !process.env.KEEP_STATE) removeState(state);
else say(`kept ${state.dir} (code-server.log, data/logs) for inspection`);
process.exit(exitCode);
