/**
 * How soon a machine stops when asked, on both engines: from `interrupt()` to the result of a
 * busy loop and of a sleep, and how far past a 1 s timeout the result of a busy loop comes.
 * (The tests check that these stop by the interrupt, in order; the time they take is measured here.)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MachineManager } from '../src/machines/machine-manager.ts';
import type { EngineName } from '../src/shared/requests.ts';
import { median, ms, row } from './stats.ts';

const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const CYCLES = 7;

/** Milliseconds from the interrupt to the result, once the code has printed that it runs. */
async function interruptLatency(manager: MachineManager, name: string, loop: string): Promise<number> {
  const { seq, done } = await manager.exec(name, `print("running")\n${loop}`, { timeoutSeconds: 120 });
  await new Promise<void>((running) => void manager.follow(name, seq, (c) => c.data === 'running' && running()));
  const t = performance.now();
  manager.interrupt(name);
  await done;
  return performance.now() - t;
}

export async function benchInterrupts(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-interrupts-'));
  const manager = await MachineManager.open({ dataDir, saveDelayMs: 600_000 });
  try {
    console.log('\ninterrupts and timeouts (median of 7)');
    row('', 'python', 'sandbox');
    const figures: Record<string, Record<EngineName, number>> = {};
    for (const engine of ['python', 'sandbox'] as const) {
      const name = (await manager.create({ engine, ...(engine === 'python' ? { python: PYTHON } : {}) })).name;
      await manager.run(name, 'import time');
      const samples = { busy: [] as number[], sleep: [] as number[], timeout: [] as number[] };
      for (let i = 0; i < CYCLES; i++) {
        samples.busy.push(await interruptLatency(manager, name, 'while True:\n    pass'));
        samples.sleep.push(await interruptLatency(manager, name, 'time.sleep(60)'));
        const t = performance.now();
        await manager.run(name, 'while True:\n    pass', { timeoutSeconds: 1 });
        samples.timeout.push(performance.now() - t - 1000);
      }
      for (const [what, values] of Object.entries(samples)) (figures[what] ??= { python: 0, sandbox: 0 })[engine] = median(values);
    }
    row('interrupt to result: busy loop', ms(figures.busy!.python), ms(figures.busy!.sandbox));
    row('interrupt to result: time.sleep', ms(figures.sleep!.python), ms(figures.sleep!.sandbox));
    row('1 s timeout of a busy loop: result after 1 s', ms(figures.timeout!.python), ms(figures.timeout!.sandbox));
  } finally {
    await manager.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
