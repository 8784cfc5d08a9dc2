import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TEST_PYTHON, tempDataDir } from './machines.ts';
import { finished, type CliRun } from './processes.ts';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
export const PLUGIN_DIR = fileURLToPath(new URL('../jupyter/', import.meta.url));
const SCENARIOS = fileURLToPath(new URL('../jupyter/scenarios.py', import.meta.url));
/** The kernels `perennial kernel install` writes for the bed: the python engine's and the sandbox's. */
export const KERNEL = 'perennial-test';
export const SANDBOX_KERNEL = 'perennial-test-sandbox';

/** A data dir with both kernels installed in a Jupyter data folder of its own, and ways to drive Jupyter's clients on it. */
export interface JupyterBed {
  readonly dataDir: string;
  readonly env: NodeJS.ProcessEnv;
  /** This build's CLI on the bed's data dir. */
  cli(args: string[]): Promise<CliRun>;
  /** Debian's Python (Jupyter's clients), in the bed's environment and `more`. */
  python(args: string[], more?: NodeJS.ProcessEnv): Promise<CliRun>;
  /** A scenario of test/jupyter/scenarios.py, which must succeed: its output. */
  scenario(name: string, more?: NodeJS.ProcessEnv): Promise<string>;
}

/**
 * Registers the hooks of a bed in the enclosing suite: made before its tests, its server stopped
 * and its folder removed after. Each suite gets one of its own, so suites run side by side.
 */
export function jupyterBed(): JupyterBed {
  let dataDir = '';
  let env: NodeJS.ProcessEnv = {};
  let cleanup = async () => {};
  const cli = (args: string[]) => finished(spawn(process.execPath, [CLI, '--data-dir', dataDir, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const python = (args: string[], more: NodeJS.ProcessEnv = {}) =>
    finished(spawn(TEST_PYTHON, args, { env: { ...env, ...more }, stdio: ['ignore', 'pipe', 'pipe'] }));
  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir({ empty: true }));
    const notebooks = join(dataDir, 'notebooks');
    await mkdir(notebooks);
    env = {
      ...process.env,
      JUPYTER_DATA_DIR: join(dataDir, 'jupyter'),
      // Jupyter's other folders may hold a kernel of the same name: this test's alone.
      JUPYTER_PATH: '',
      PERENNIAL_KERNEL_NAME: KERNEL,
      PERENNIAL_SANDBOX_KERNEL_NAME: SANDBOX_KERNEL,
      PERENNIAL_CLI: CLI,
      PERENNIAL_NODE: process.execPath,
      PERENNIAL_DATA_DIR: dataDir,
      NOTEBOOK_DIR: notebooks,
      PYTHONPATH: PLUGIN_DIR,
      PYDEVD_DISABLE_FILE_VALIDATION: '1',
      PYTHONDONTWRITEBYTECODE: '1',
    };
    const installed = await cli(['kernel', 'install', '--name', KERNEL, '--engine', 'python', '--python', TEST_PYTHON]);
    assert.equal(installed.code, 0, installed.stderr);
    const sandbox = await cli(['kernel', 'install', '--name', SANDBOX_KERNEL, '--engine', 'sandbox']);
    assert.equal(sandbox.code, 0, sandbox.stderr);
  });
  after(async () => {
    await cli(['stop']);
    await cleanup();
  });
  return {
    get dataDir() {
      return dataDir;
    },
    get env() {
      return env;
    },
    cli,
    python,
    async scenario(name, more = {}) {
      const run = await python([SCENARIOS, name], more);
      assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
      return run.stdout;
    },
  };
}
