/**
 * Foundation figures for the python engine: the `1+1` round trip through the MachineManager next
 * to the floor (a JSON line echoed by a bare Python child over a pipe), and swap-out / swap-in
 * times and bytes on disk for a trivial machine, one holding a 10^6-element list, one with 300k
 * objects shared between variables, and the same with a variable that cannot be loaded back (the
 * restore then reads the whole snapshot again, with a mended memo).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { MachineManager } from '../src/machines/machine-manager.ts';
import { kib, median, ms, percentile, row, timeIt } from './stats.ts';

const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
/** Many small objects, some of them in more than one variable. */
const SHARED_ROWS = 'rows = [{"id": i, "name": f"n{i}", "tags": [i % 7]} for i in range(300_000)]\nalias = rows\nsome = rows[:1000]';
/** Saves, but cannot be loaded back: the restore then takes its careful path. */
const FRAGILE = 'class Fragile:\n    def __reduce__(self):\n        return int, ("not a number",)';
const ROUND_TRIPS = 3000;
const SWAP_CYCLES = 7;

async function pipeFloor(): Promise<number[]> {
  const child = spawn(PYTHON, ['-u', '-c', 'import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const samples: number[] = [];
  const message = JSON.stringify({ id: 1, op: 'run', code: '1+1', cell: 1 }) + '\n';
  for (let i = 0; i < ROUND_TRIPS + 200; i++) {
    const t = performance.now();
    child.stdin!.write(message);
    await lines.next();
    if (i >= 200) samples.push(performance.now() - t);
  }
  child.stdin!.end();
  return samples;
}

export async function benchPythonEngine(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-'));
  const manager = await MachineManager.open({ dataDir, saveDelayMs: 60_000 });
  try {
    console.log(`python engine (${PYTHON})`);
    const floor = await pipeFloor();
    const name = (await manager.create({ engine: 'python', python: PYTHON })).name;
    const trips: number[] = [];
    for (let i = 0; i < ROUND_TRIPS + 200; i++) {
      const t = performance.now();
      await manager.run(name, '1+1');
      if (i >= 200) trips.push(performance.now() - t);
    }
    row('', 'p50', 'p95');
    row('floor: JSON line through a bare Python pipe', ms(median(floor)), ms(percentile(floor, 95)));
    row('exec 1+1 on a warm machine (MachineManager)', ms(median(trips)), ms(percentile(trips, 95)));
    row('  over the floor', ms(median(trips) - median(floor)), ms(percentile(trips, 95) - percentile(floor, 95)));

    row('', 'swap-out', 'swap-in', 'on disk');
    // [label, setup, code run before each swap]
    for (const [label, setup, beforeSwap] of [
      ['trivial machine (x = 1)', 'x = 1', 'x = 1'],
      ['machine holding list(range(10**6))', 'big = list(range(10**6))', 'x = 1'],
      ['300k dicts shared by 3 variables', SHARED_ROWS, 'x = 1'],
      ['  the same, one variable cannot be loaded', `${SHARED_ROWS}\n${FRAGILE}`, 'broken = Fragile()'],
    ] as const) {
      const machine = (await manager.create({ engine: 'python', python: PYTHON })).name;
      await manager.run(machine, setup);
      const outs: number[] = [];
      const ins: number[] = [];
      for (let i = 0; i < SWAP_CYCLES; i++) {
        await manager.run(machine, beforeSwap);
        outs.push(await timeIt(() => manager.swap(machine)));
        ins.push(await timeIt(() => manager.run(machine, '1')));
      }
      row(label, ms(median(outs)), ms(median(ins)), kib(manager.get(machine).snapshot!.bytes));
    }
    console.log('  (swap-in = the first instruction after a swap: process start, restore and the instruction)');
  } finally {
    await manager.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
