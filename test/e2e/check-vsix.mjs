// The package as a user gets it: installs the .vsix into a clean code-server with
// `--install-extension`, opens the workbench, checks that the extension activates, and creates a
// sandbox machine from the Machines view's welcome (which starts the local server from the files
// the package carries), and that the package carries the MCP App view and nothing built for one system.
// Usage: node test/e2e/check-vsix.mjs <perennial-x.y.z.vsix>   (env: CS_NODE, CS_ENTRY)
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { codeServerPaths, freshState, installExtension, launchChromium, removeState, startCodeServer, stopPerennialServer } from './vscode-session.mjs';

const vsix = process.argv[2];
if (!vsix || !existsSync(vsix)) {
  console.error('usage: check-vsix.mjs <path to perennial-repl-*.vsix>');
  process.exit(2);
}
codeServerPaths();
const state = freshState();
installExtension(state, resolve(vsix));
// One package serves every system: nothing in it may be built for one (an addon, a library, a program).
const native = readdirSync(join(state.dir, 'extensions'), { recursive: true }).filter((path) => /\.(node|so|dylib|dll|exe)$/.test(String(path)));
if (native.length) {
  console.error(`check-vsix: the package carries files built for one system: ${native.join(', ')}`);
  process.exit(1);
}
const server = await startCodeServer(state);
const browser = await launchChromium(state);

/** The extension's own log ("Perennial" output channel), once the extension host wrote it. */
function extensionLog() {
  const logs = join(state.dir, 'data', 'logs');
  for (const session of existsSync(logs) ? readdirSync(logs) : []) {
    for (const host of readdirSync(join(logs, session)).filter((name) => name.startsWith('exthost'))) {
      const file = join(logs, session, host, 'perennial.perennial-repl', 'Perennial.log');
      if (existsSync(file)) return readFileSync(file, 'utf8');
    }
  }
  return '';
}

async function until(check, what, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

let failure;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 850 } });
  await page.goto(`http://${server.authority}/?folder=${encodeURIComponent(state.workspace)}`);
  await until(() => extensionLog().includes('Perennial activated'), 'the installed extension to activate');
  await page.locator('.activitybar [aria-label^="Perennial"]').first().click();
  const welcome = page.getByRole('button', { name: 'New Machine' }).first();
  await welcome.waitFor({ timeout: 30_000 });
  await welcome.click();
  // Engine sandbox (the person's own Python is offered first in a trusted workspace), then no
  // tags; each prompt is waited for before answering.
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'sandbox' }).first().waitFor();
  await page.keyboard.type('sandbox');
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget', { hasText: 'Tags (optional)' }).waitFor();
  await page.keyboard.press('Enter');
  await until(
    async () => (await page.locator('.part.sidebar .monaco-list-row').allInnerTexts()).some((row) => /warm|busy|swapped/.test(row)),
    'the new machine in the Machines view',
    120_000,
  );
  // The MCP App view the local server serves comes from the package too.
  const installed = readdirSync(join(state.dir, 'extensions')).find((name) => name.startsWith('perennial.perennial-repl-'));
  if (!installed || !existsSync(join(state.dir, 'extensions', installed, 'dist/view/machine.html')))
    throw new Error('the package has no dist/view/machine.html');
  console.log(
    'check-vsix: installed, activated, and created a sandbox machine from the package, which carries the MCP App view and nothing built for one system',
  );
} catch (error) {
  failure = error;
} finally {
  await browser.close();
  server.kill();
  await stopPerennialServer(state);
}
if (failure) {
  console.error(`check-vsix failed: ${failure.message}\n  kept ${state.dir}; the extension's log:\n${extensionLog()}`);
  process.exit(1);
}
removeState(state);
