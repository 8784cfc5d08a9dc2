/**
 * Fork, checkpoint and rollback on both engines, for a trivial machine and one holding a
 * 10^6-element list: a checkpoint's time and size, a fork's time to its first result, and a
 * rollback's time to its first result next to a swap-in's (the same restore, from the machine's
 * own snapshot). Targets: a trivial sandbox fork ≤ 150 ms to its first result, a trivial
 * checkpoint ≤ 50 KB, rollback ≤ swap-in.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngines } from '../src/engines/index.ts';
import { pyodideRuntimes, type PyodideRuntime } from '../src/engines/sandbox/pyodide-runtimes.ts';
import { MachineManager } from '../src/machines/machine-manager.ts';
import type { EngineName } from '../src/shared/requests.ts';
import { kib, median, ms, row, timeIt } from './stats.ts';

const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const ROUNDS = 9;
/**
 * Time for what an operation leaves running to end before the next is measured: a sandbox pool
 * booting and warming its next process; a stopped process's exit and the disk's flushes.
 */
const SETTLE_MS = { sandbox: 2500, python: 500 };

/** The python engine, and the sandbox on every Pyodide build it ships. */
const LANES: Array<{ engine: EngineName; pyodide?: PyodideRuntime }> = [
  { engine: 'python' },
  ...pyodideRuntimes().map((pyodide) => ({ engine: 'sandbox' as const, pyodide })),
];

export async function benchCheckpoints(): Promise<void> {
  console.log(`fork, checkpoint and rollback (median of ${ROUNDS}; each to the first result after it)`);
  row('', 'checkpoint', 'size', 'fork', 'rollback', '  ...unsaved', 'swap-in');
  for (const lane of LANES) await benchLane(lane.engine, lane.pyodide);
  console.log('  (checkpoint: saving the changed state and linking it; size: what the checkpoint holds on disk;');
  console.log('   rollback: from a saved state; ...unsaved: right after an instruction, whose change it saves first)');
}

async function benchLane(engine: EngineName, pyodide: PyodideRuntime | undefined): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-'));
  // No automatic checkpoints during the runs: every figure is of the operation measured.
  const manager = await MachineManager.open({ dataDir, saveDelayMs: 600_000, engines: openEngines({ dataDir, sandboxPyodide: pyodide }) });
  const lane = pyodide ? `${engine} (Pyodide ${pyodide.version})` : engine;
  try {
    manager.prewarm();
    for (const [label, setup] of [
      ['trivial machine (x = 1)', 'x = 1'],
      ['machine holding list(range(10**6))', 'big = list(range(10**6))'],
    ] as const) {
      const name = (await manager.create({ engine, ...(engine === 'python' ? { python: PYTHON } : {}) })).name;
      await manager.run(name, setup);
      const checkpoints: number[] = [];
      const sizes: number[] = [];
      const forks: number[] = [];
      const rollbacks: number[] = [];
      const unsavedRollbacks: number[] = [];
      const swapIns: number[] = [];
      const settle = async () => {
        manager.prewarm();
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS[engine]));
      };
      for (let i = 0; i < ROUNDS; i++) {
        await manager.run(name, 'x = 1');
        await settle();
        let id = '';
        checkpoints.push(
          await timeIt(async () => {
            const checkpoint = await manager.checkpoint(name, { label: `round-${i}` });
            id = checkpoint.id;
            sizes.push(checkpoint.bytes);
          }),
        );
        await settle();
        let fork = '';
        forks.push(
          await timeIt(async () => {
            fork = (await manager.fork(name)).name;
            await manager.run(fork, '1');
          }),
        );
        await manager.delete(fork);
        const rollback = async () => {
          await manager.rollback(name, id);
          await manager.run(name, '1');
        };
        // As a second after an instruction: its change is already saved (an automatic checkpoint).
        await manager.run(name, 'x = 2');
        await manager.save(name);
        await settle();
        rollbacks.push(await timeIt(rollback));
        // Right after an instruction: the rollback saves the change first.
        await manager.run(name, 'x = 3');
        await settle();
        unsavedRollbacks.push(await timeIt(rollback));
        await manager.swap(name);
        await settle();
        swapIns.push(await timeIt(() => manager.run(name, '1')));
      }
      row(
        `${lane}: ${label}`,
        ms(median(checkpoints)),
        kib(median(sizes)),
        ms(median(forks)),
        ms(median(rollbacks)),
        ms(median(unsavedRollbacks)),
        ms(median(swapIns)),
      );
      await manager.delete(name);
    }
  } finally {
    await manager.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
