/**
 * Fork, checkpoint and rollback on both engines, for a trivial machine and one holding a
 * 10^6-element list: a checkpoint's time and size, a fork's time to its first result, and a
 * rollback's time to its first result next to a swap-in's (the same restore, from the machine's
 * own snapshot). Each figure is printed beside its target, and below each machine, where the
 * milliseconds of a checkpoint, a fork and a swap-in went (the phases the code publishes, see
 * `phase-timings.ts`; "the rest" is what no phase covers: the machine's queue, the first
 * instruction, messages).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngines } from '../src/engines/index.ts';
import { pyodideRuntimes, type PyodideRuntime } from '../src/engines/sandbox/pyodide-runtimes.ts';
import { MachineManager } from '../src/machines/machine-manager.ts';
import { listenToPhases } from '../src/platform/phase-timings.ts';
import type { EngineName } from '../src/shared/requests.ts';
import { kib, median, ms } from './stats.ts';

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

/** The machines measured; `figures`: which figures each is measured for (a large one only swaps). */
const MACHINES = [
  { name: 'trivial', label: 'trivial machine (x = 1)', setup: 'x = 1', rounds: ROUNDS, engines: ['python', 'sandbox'] },
  { name: 'big', label: 'machine holding list(range(10**6))', setup: 'big = list(range(10**6))', rounds: ROUNDS, engines: ['python', 'sandbox'] },
  { name: 'random', label: 'machine holding 80 MB of random bytes', setup: 'blob = __import__("os").urandom(80 * 10**6)', rounds: 3, engines: ['sandbox'] },
] as const;

type Figure = 'pause' | 'durable' | 'size' | 'fork' | 'rollback' | 'unsaved' | 'swapOut' | 'swapIn';
const COLUMNS: Record<Figure, string> = {
  pause: 'pause',
  durable: 'on disk',
  size: 'size',
  fork: 'fork',
  rollback: 'rollback',
  unsaved: '...unsaved',
  swapOut: 'swap-out',
  swapIn: 'swap-in',
};
/** The operations whose phases are shown. */
const TIMED = ['durable', 'fork', 'swapIn'] as const;
type Timed = (typeof TIMED)[number];

/** Issue 52's targets: milliseconds, and bytes for `size`; rollbacks are held to the swap-in. */
const TARGETS: Record<string, Partial<Record<Figure, number>>> = {
  'sandbox trivial': { pause: 20, durable: 100, size: 40_000, fork: 15, swapIn: 15 },
  'sandbox big': { pause: 50, fork: 100, swapIn: 100 },
  'sandbox random': { swapOut: 500, swapIn: 500 },
  'python trivial': { fork: 25, swapIn: 25 },
};

/** The figures of the current sandbox build, for the summary of targets. */
export const sandboxFigures = new Map<string, number>();

export async function benchCheckpoints(): Promise<void> {
  console.log(`fork, checkpoint and rollback (median of ${ROUNDS}, 3 for the 80 MB machine; each to the first result after it; the target after each figure)`);
  console.log(
    `  ${''.padEnd(58)}${Object.values(COLUMNS)
      .map((c) => c.padStart(18))
      .join('')}`,
  );
  for (const lane of LANES) await benchLane(lane.engine, lane.pyodide);
  console.log("  (pause: from a checkpoint's start to the result of an instruction sent right after it, which waits for the machine;");
  console.log('   on disk: the checkpoint taken, its state written and synced, the checkpoint recorded; size: what it holds on disk;');
  console.log('   rollback: from a saved state, held to the swap-in; ...unsaved: right after an instruction, whose change it saves first;');
  console.log('   swap-out: a changed state saved and the process stopped)');
}

async function benchLane(engine: EngineName, pyodide: PyodideRuntime | undefined): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-'));
  // No automatic checkpoints during the runs: every figure is of the operation measured.
  const manager = await MachineManager.open({ dataDir, saveDelayMs: 600_000, engines: openEngines({ dataDir, sandboxPyodide: pyodide }) });
  const lane = pyodide ? `${engine} (Pyodide ${pyodide.version})` : engine;
  // The phases of the operation being timed, as the code publishes them.
  let phases: Map<string, number> | undefined;
  const stopListening = listenToPhases(({ phase, ms }) => phases?.set(phase, (phases.get(phase) ?? 0) + ms));
  const timed = async (task: () => Promise<unknown>): Promise<{ ms: number; phases: Map<string, number> }> => {
    const own = new Map<string, number>();
    phases = own;
    const start = performance.now();
    try {
      await task();
    } finally {
      phases = undefined;
    }
    return { ms: performance.now() - start, phases: own };
  };
  try {
    manager.prewarm();
    for (const machine of MACHINES) {
      if (!(machine.engines as readonly string[]).includes(engine)) continue;
      const name = (await manager.create({ engine, ...(engine === 'python' ? { python: PYTHON } : {}) })).name;
      await manager.run(name, machine.setup);
      const figures: Record<Figure, number[]> = { pause: [], durable: [], size: [], fork: [], rollback: [], unsaved: [], swapOut: [], swapIn: [] };
      const breakdowns: Record<Timed, Array<Map<string, number>>> = { durable: [], fork: [], swapIn: [] };
      const record = (figure: Timed, result: { ms: number; phases: Map<string, number> }) => {
        figures[figure].push(result.ms);
        breakdowns[figure].push(result.phases);
      };
      const settle = async () => {
        manager.prewarm();
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS[engine]));
      };
      const full = machine.name !== 'random';
      for (let i = 0; i < machine.rounds; i++) {
        await manager.run(name, 'x = 1');
        await settle();
        let id = '';
        let pause = Promise.resolve(0);
        record(
          'durable',
          await timed(async () => {
            const started = performance.now();
            const checkpoint = manager.checkpoint(name, { label: `round-${i}` });
            pause = manager.run(name, '1').then(() => performance.now() - started);
            const taken = await checkpoint;
            id = taken.id;
            figures.size.push(taken.bytes);
          }),
        );
        figures.pause.push(await pause);
        // The instruction that timed the pause changed the machine: saved, as the checkpoint left it.
        await manager.save(name);
        await settle();
        if (full) {
          let fork = '';
          record(
            'fork',
            await timed(async () => {
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
          figures.rollback.push((await timed(rollback)).ms);
          // Right after an instruction: the rollback saves the change first.
          await manager.run(name, 'x = 3');
          await settle();
          figures.unsaved.push((await timed(rollback)).ms);
        }
        await manager.run(name, 'x = 4');
        figures.swapOut.push((await timed(() => manager.swap(name))).ms);
        await settle();
        record('swapIn', await timed(() => manager.run(name, '1')));
      }
      const targets = TARGETS[`${engine} ${machine.name}`] ?? {};
      const swapIn = median(figures.swapIn);
      const cell = (figure: Figure) => {
        if (!figures[figure].length) return ''.padStart(18);
        const value = median(figures[figure]);
        if (pyodide === pyodideRuntimes()[0] && engine === 'sandbox') sandboxFigures.set(`${machine.name} ${figure}`, value);
        const text = figure === 'size' ? kib(value) : ms(value);
        const target = figure === 'rollback' || figure === 'unsaved' ? swapIn : targets[figure];
        if (target === undefined) return text.padStart(18);
        const held = value <= target ? '✓' : '✗';
        const bound = figure === 'size' ? `${target / 1000} KB` : figure === 'rollback' || figure === 'unsaved' ? 'swap' : `${target}`;
        return `${text} ≤${bound}${held}`.padStart(18);
      };
      console.log(`  ${`${lane}: ${machine.label}`.padEnd(58)}${(Object.keys(COLUMNS) as Figure[]).map(cell).join('')}`);
      for (const figure of TIMED) {
        if (figures[figure].length) console.log(`      ${COLUMNS[figure]}: ${breakdown(figures[figure], breakdowns[figure])}`);
      }
      await manager.delete(name);
    }
  } finally {
    stopListening();
    await manager.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Each phase's median over the rounds, in the order they came, then what they leave of the median total. */
function breakdown(totals: number[], rounds: Array<Map<string, number>>): string {
  const names = [...new Set(rounds.flatMap((round) => [...round.keys()]))];
  const medians = names.map((name) => [name, median(rounds.map((round) => round.get(name) ?? 0))] as const);
  const rest = median(totals) - medians.reduce((sum, [, value]) => sum + value, 0);
  return [...medians, ['the rest', Math.max(0, rest)] as const].map(([name, value]) => `${name} ${value.toFixed(1)}`).join(' · ');
}
