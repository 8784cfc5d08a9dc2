/**
 * The Jupyter kernel as jupyter_client sees it, beside Debian's ipykernel: a new kernel's start
 * until it answers, its first cell (the machine started, or swapped in), and a cell's round trip.
 * A Perennial kernel is a thin process: its cells cross the local server to the notebook's machine.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, ms, percentile, row } from './stats.ts';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const DRIVER = fileURLToPath(new URL('./jupyter_latency.py', import.meta.url));
const PYTHON = process.env.PERENNIAL_TEST_PYTHON ?? '/usr/bin/python3';
const RUNS = 100;

interface Timing {
  ready: number;
  first: number;
  rounds: number[];
}

export async function benchJupyter(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'perennial-bench-jupyter-'));
  const env = { ...process.env, JUPYTER_DATA_DIR: join(dir, 'jupyter'), JUPYTER_PATH: '' };
  const cli = (...args: string[]) => execFileSync(process.execPath, [CLI, '--data-dir', join(dir, 'data'), ...args], { env, stdio: 'pipe' });
  const time = (kernel: string, kernelEnv = env): Timing =>
    JSON.parse(
      execFileSync(PYTHON, [DRIVER, kernel, String(RUNS)], { env: kernelEnv, cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
    ) as Timing;
  try {
    cli('kernel', 'install', '--name', 'perennial-bench', '--engine', 'python', '--python', PYTHON);
    execFileSync(PYTHON, ['-m', 'ipykernel', 'install', '--prefix', join(dir, 'ipykernel'), '--name', 'ipykernel-bench'], { env, stdio: 'pipe' });
    const ipykernelEnv = { ...env, JUPYTER_PATH: join(dir, 'ipykernel', 'share', 'jupyter') };
    console.log(`Jupyter kernels through jupyter_client (${RUNS} cells of x + 1 each)`);
    row('', 'ready', 'first cell', 'cell p50', 'cell p95');
    const show = (label: string, t: Timing) =>
      row(label, ms(t.ready * 1000), ms(t.first * 1000), ms(median(t.rounds) * 1000), ms(percentile(t.rounds, 95) * 1000));
    show(
      'ipykernel (Debian), for comparison',
      JSON.parse(execFileSync(PYTHON, [DRIVER, 'ipykernel-bench', String(RUNS)], { env: ipykernelEnv, cwd: dir, encoding: 'utf8' })) as Timing,
    );
    show('perennial, a new notebook (the kernel starts the server)', time('perennial-bench'));
    // The last kernel's shutdown swapped the machine out: the first cell swaps it in.
    show('perennial, the same notebook again (machine swapped in)', time('perennial-bench'));
    cli('stop');
    show('perennial, after the server stopped (server started, machine in)', time('perennial-bench'));
  } finally {
    try {
      cli('stop');
    } catch {
      // Already stopped.
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
