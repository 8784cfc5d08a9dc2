// A real Jupyter front end in a real browser: Debian's Jupyter server (jupyter_server 1.23, which
// tells a kernel its notebook's path) with its classic notebook front end (nbclassic), the
// kernelspec `perennial kernel install` writes, a notebook opened in headless Chromium and a cell
// run; then the Jupyter server stopped (it shuts its kernels down) and started again, the notebook
// opened again, and its variable still there. Screenshots in .cache/e2e/screenshots.
// Needs a build, Chromium (CHROMIUM, default /usr/bin/chromium) and Debian's python3-nbclassic.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { TEST_PYTHON, tempDataDir } from '../helpers/machines.ts';
import { finished, freePort } from '../helpers/processes.ts';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const SCREENSHOTS = fileURLToPath(new URL('../../.cache/e2e/screenshots/', import.meta.url));
const KERNEL = 'perennial-e2e';
const TOKEN = 'perennial-e2e-token';
/** How long a step in the browser may take: a kernel's start includes the Perennial server's. */
const STEP_MS = 120_000;

describe('a notebook in the classic Jupyter front end keeps its state across a Jupyter restart', { timeout: 600_000 }, () => {
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let env: NodeJS.ProcessEnv;
  let root: string;
  let browser: Browser;

  before(async () => {
    data = await tempDataDir({ empty: true });
    root = join(data.dir, 'notebooks');
    await mkdir(root);
    await mkdir(SCREENSHOTS, { recursive: true });
    env = {
      ...process.env,
      JUPYTER_DATA_DIR: join(data.dir, 'jupyter-data'),
      JUPYTER_CONFIG_DIR: join(data.dir, 'jupyter-config'),
      JUPYTER_RUNTIME_DIR: join(data.dir, 'jupyter-runtime'),
      JUPYTER_PATH: '',
      PYTHONDONTWRITEBYTECODE: '1',
    };
    const installed = await finished(
      spawn(process.execPath, [CLI, '--data-dir', data.dir, 'kernel', 'install', '--name', KERNEL, '--engine', 'python', '--python', TEST_PYTHON], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    assert.equal(installed.code, 0, installed.stderr);
    const cell = (source: string) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source });
    await writeFile(
      join(root, 'persist.ipynb'),
      JSON.stringify({
        nbformat: 4,
        nbformat_minor: 5,
        metadata: { kernelspec: { name: KERNEL, display_name: 'Python (Perennial)', language: 'python' } },
        cells: [cell('x = 41\nprint("x is set")'), cell('x + 1')],
      }),
    );
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
    });
  });
  after(async () => {
    await browser?.close();
    await finished(spawn(process.execPath, [CLI, '--data-dir', data.dir, 'stop'], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
    await data.cleanup();
  });

  /** Debian's Jupyter server with the classic front end, on a port of its own; answers once it serves. */
  async function startJupyter(): Promise<{ url: string; stop(): Promise<void> }> {
    const port = await freePort();
    const child: ChildProcess = spawn(
      TEST_PYTHON,
      [
        '/usr/bin/jupyter-nbclassic',
        '--no-browser',
        '--allow-root',
        `--port=${port}`,
        '--ip=127.0.0.1',
        `--ServerApp.token=${TOKEN}`,
        `--ServerApp.root_dir=${root}`,
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        if (log.includes(`127.0.0.1:${port}/`)) resolve();
      });
      child.once('exit', (code) => reject(new Error(`the Jupyter server exited (${code}):\n${log}`)));
    });
    return {
      url: `http://127.0.0.1:${port}`,
      async stop() {
        // As Ctrl-C twice would: the server shuts its kernels down, then exits.
        child.kill('SIGTERM');
        if (child.exitCode === null) await once(child, 'exit');
      },
    };
  }

  /** Opens the notebook and runs its cell `index` once its kernel is idle; answers that cell's output text. */
  async function runCell(page: Page, url: string, index: number, expected: string): Promise<string> {
    await page.goto(`${url}/notebooks/persist.ipynb?token=${TOKEN}`);
    await page.locator('#kernel_indicator_icon.kernel_idle_icon').waitFor({ timeout: STEP_MS });
    const cell = page.locator('#notebook-container .cell').nth(index);
    await cell.locator('.CodeMirror').click();
    await page.keyboard.press('Shift+Enter');
    const output = cell.locator('.output_area', { hasText: expected }).first();
    await output.waitFor({ timeout: STEP_MS });
    return (await cell.locator('.output').innerText()).trim();
  }

  it('runs a cell on the notebook machine, and after Jupyter stops and starts again the variable is still there', async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
    const first = await startJupyter();
    try {
      const shown = await runCell(page, first.url, 0, 'x is set');
      // A brand-new machine says nothing in the notebook.
      assert.doesNotMatch(shown, /\[perennial\]/);
      await page.screenshot({ path: join(SCREENSHOTS, 'jupyter-1-first-run.png') });
    } finally {
      await first.stop();
    }

    const second = await startJupyter();
    try {
      const shown = await runCell(page, second.url, 1, '42');
      assert.match(shown, /its variables, imports and functions are as the last kernel left them/);
      assert.match(shown, /Out\[\d+\]:\s*42/);
      await page.screenshot({ path: join(SCREENSHOTS, 'jupyter-2-after-restart.png') });
    } finally {
      await second.stop();
      await page.close();
    }
  });
});
