/**
 * Sandbox engine figures: create (warm pool and cold), exec p50, swap-out/in, bytes on disk,
 * RSS of a warm machine, and pure-Python speed against the python engine.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngines } from '../src/engines/index.ts';
import { pyodideRuntimes, type PyodideRuntime } from '../src/engines/sandbox/pyodide-runtimes.ts';
import { MachineManager } from '../src/machines/machine-manager.ts';
import { kib, median, ms, row, timeIt, treeMemory } from './stats.ts';

const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const SAMPLES = 7;
/** Swap cycles for the on-disk size of a long-lived machine. */
const LONG_LIFE = 100;

/** Pure-Python work, timed by the kernel's own runtime_ms. */
export const SPEED = {
  'fib(27)': 'def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nfib(27)',
  'regex on 4 MB':
    'import re\ntext = "the quick brown fox jumps over the lazy dog " * 100000\nlen(re.findall(r"\\b\\w{5}\\b", text)), len(re.sub(r"o+", "0", text))',
  'sort 1M floats': 'import random\nrandom.seed(1)\nvalues = [random.random() for _ in range(1_000_000)]\nsorted(values)[0] >= 0',
};

async function openRuntimeManager(dataDir: string, poolSize: number, pyodide: PyodideRuntime): Promise<MachineManager> {
  return MachineManager.open({ dataDir, saveDelayMs: 600_000, engines: openEngines({ dataDir, sandboxPoolSize: poolSize, sandboxPyodide: pyodide }) });
}

/** Waits until a manager's pool holds a ready machine, by timing an instant create + run. */
async function settle(manager: MachineManager): Promise<void> {
  manager.prewarm();
  await new Promise((r) => setTimeout(r, 4000));
}

/** Every Pyodide build the sandbox ships, the current one first: machines made on an older one still run it. */
export async function benchSandboxEngine(): Promise<void> {
  for (const pyodide of pyodideRuntimes()) await benchRuntime(pyodide);
}

async function benchRuntime(pyodide: PyodideRuntime): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-sandbox-'));
  const openManager = (poolSize: number) => openRuntimeManager(dataDir, poolSize, pyodide);
  try {
    console.log(`\nsandbox engine (Pyodide ${pyodide.version}, Python ${pyodide.python})`);
    // The base image: booted cold once per Pyodide and kernel version, then kept in the data dir.
    let manager = await openManager(0);
    const firstEver = await timeIt(async () => {
      const name = (await manager.create({ engine: 'sandbox' })).name;
      await manager.run(name, '1+1');
    });
    await manager.close();

    manager = await openManager(0);
    const cold: number[] = [];
    for (let i = 0; i < 3; i++) {
      cold.push(
        await timeIt(async () => {
          const name = (await manager.create({ engine: 'sandbox' })).name;
          await manager.run(name, '1+1');
        }),
      );
    }
    await manager.close();

    manager = await openManager(1);
    const pooled: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      await settle(manager);
      pooled.push(
        await timeIt(async () => {
          const name = (await manager.create({ engine: 'sandbox' })).name;
          await manager.run(name, '1+1');
        }),
      );
    }
    row('', 'median');
    row('first machine ever (cold boot of the base image)', ms(firstEver));
    row('create + first result, cold (no pool)', ms(median(cold)));
    row('create + first result, from a warm pool', ms(median(pooled)));

    const name = (await manager.create({ engine: 'sandbox' })).name;
    await manager.run(name, 'x = 1');
    const trips: number[] = [];
    for (let i = 0; i < 1200; i++) {
      const t = performance.now();
      await manager.run(name, '1+1');
      if (i >= 200) trips.push(performance.now() - t);
    }
    row('exec 1+1 on a warm machine, p50', ms(median(trips)));
    // A warm machine as it sits between instructions.
    await new Promise((r) => setTimeout(r, 2000));
    const rss = treeMemory(manager.processId(name)!);
    row('RSS of a warm trivial machine (process tree)', kib(rss));

    row('', 'swap-out', 'swap-in', 'on disk');
    for (const [label, setup] of [
      ['trivial machine (x = 1)', 'x = 1'],
      ['machine holding list(range(2_600_000))', 'big = list(range(2_600_000))'],
    ] as const) {
      const machine = (await manager.create({ engine: 'sandbox' })).name;
      await manager.run(machine, setup);
      const outs: number[] = [];
      const ins: number[] = [];
      const sizes: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        await settle(manager);
        await manager.run(machine, 'y = 1');
        outs.push(await timeIt(() => manager.swap(machine)));
        sizes.push(manager.get(machine).snapshot!.bytes);
        ins.push(await timeIt(() => manager.run(machine, '1')));
      }
      row(label, ms(median(outs)), ms(median(ins)), kib(sizes.at(-1)!));
      if (setup !== 'x = 1') continue;
      // What a long-lived machine keeps: every restore allocates a little, so the image may grow.
      for (let i = SAMPLES; i < LONG_LIFE; i++) {
        await manager.run(machine, 'y = 1');
        await manager.swap(machine);
        await manager.run(machine, '1');
      }
      row(
        `  on disk after 1 / ${SAMPLES} / ${LONG_LIFE} swaps`,
        '',
        '',
        `${kib(sizes[0]!)} / ${kib(sizes.at(-1)!)} / ${kib(manager.get(machine).snapshot!.bytes)}`,
      );
    }
    console.log('  (swap-in = the first instruction after a swap: a pooled process restores the image, then runs it)');

    row('', 'sandbox', 'python', 'ratio');
    const py = (await manager.create({ engine: 'python', python: PYTHON })).name;
    for (const [label, code] of Object.entries(SPEED)) {
      const sandboxTimes: number[] = [];
      const pythonTimes: number[] = [];
      for (let i = 0; i < 4; i++) {
        sandboxTimes.push((await manager.run(name, code, { timeoutSeconds: 120 })).result.runtime_ms);
        pythonTimes.push((await manager.run(py, code, { timeoutSeconds: 120 })).result.runtime_ms);
      }
      // The first run warms V8's tiers up; the median of the rest is reported.
      const s = median(sandboxTimes.slice(1));
      const p = median(pythonTimes.slice(1));
      row(label, ms(s), ms(p), `${(s / p).toFixed(2)}x`);
    }
    await manager.close();
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}
