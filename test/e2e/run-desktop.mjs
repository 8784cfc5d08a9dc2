// The extension's end-to-end suite in desktop VS Code, through @vscode/test-electron, so that a
// contributor on Windows or macOS (or Linux with a display) tests the extension on their own
// system: `npm run test:e2e:desktop`. The tests that read or act on the workbench's page (the
// Machines view, the chat, screenshots) need the Playwright-driven code-server run
// (run-vscode.mjs) and are skipped here, each saying so; so is the check after a window reload.
// Untested on the project's own machine, which cannot download VS Code: there it stops at once
// and says why. Env: VSCODE_VERSION (default stable).
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { downloadAndUnzipVSCode, runTests } from '@vscode/test-electron';
import { buildSuite, freshState, removeState, stopPerennialServer, TEST_EXTENSIONS } from './vscode-session.mjs';

const root = resolve(new URL('../..', import.meta.url).pathname.replace(/^\/([A-Za-z]:)/, '$1'));
let vscodeExecutablePath;
try {
  vscodeExecutablePath = await downloadAndUnzipVSCode(process.env.VSCODE_VERSION ?? 'stable');
} catch (error) {
  const reason = String(error instanceof Error ? error.message : error).split('\n')[0];
  console.error(`test:e2e:desktop: cannot download desktop VS Code here (${reason}); run it where update.code.visualstudio.com is reachable`);
  process.exit(1);
}
const suiteDir = await buildSuite(root);
const state = freshState();
// The code-server run's interpreter is Debian's; on your system the server finds yours.
if (!process.env.PERENNIAL_PYTHON) delete state.env.PERENNIAL_PYTHON;
const shots = join(state.dir, 'shots');
mkdirSync(shots);
let failed = false;
try {
  await runTests({
    vscodeExecutablePath,
    // The suite's own extensions (the chat host, the Python extension's stand-in) are under development too.
    extensionDevelopmentPath: [root, ...TEST_EXTENSIONS.map((host) => join(root, 'test/e2e', host))],
    extensionTestsPath: join(suiteDir, 'index.cjs'),
    launchArgs: [state.workspace, '--user-data-dir', join(state.dir, 'data'), '--extensions-dir', join(state.dir, 'extensions')],
    extensionTestsEnv: {
      ...state.env,
      // Not your own machines: on Windows and macOS the data dir is not below XDG_DATA_HOME.
      PERENNIAL_HOME: state.perennialDataDir,
      PERENNIAL_E2E_DESKTOP: '1',
      PERENNIAL_E2E_RESULTS: join(state.dir, 'results.json'),
      PERENNIAL_E2E_WORKSPACE: state.workspace,
      PERENNIAL_E2E_SHOTS: shots,
      // Written by the suite to ask for a reload, which only the code-server run does.
      PERENNIAL_E2E_RELOAD: join(state.dir, 'reload.json'),
    },
  });
} catch (error) {
  failed = true;
  console.error(`test:e2e:desktop: ${error instanceof Error ? error.message : String(error)}`);
} finally {
  await stopPerennialServer(state);
  if (!failed) removeState(state);
}
process.exit(failed ? 1 : 0);
