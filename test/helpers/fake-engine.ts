import { readFile, writeFile } from 'node:fs/promises';
import {
  EngineExitedError,
  type Engine,
  type EngineExit,
  type EngineOptions,
  type CellListeners,
  type RestoreReport,
  type SnapshotReport,
} from '../../src/engines/engine.ts';
import type { EngineSet } from '../../src/engines/index.ts';
import type { KernelArgs, KernelOp, KernelResult } from '../../src/engines/kernel-commands.ts';
import type { ExecResult, MachineRuntime } from '../../src/shared/types.ts';

/**
 * Failures the fake engines produce on demand, for the paths a real interpreter takes only under
 * duress: a full disk at a save, a snapshot that cannot be read back.
 */
export interface Faults {
  /** The next snapshots fail with this errno code (ENOSPC: a full disk) while it is set. */
  snapshot?: string;
  /** Restores fail with this message while it is set. */
  restore?: string;
  /** Starts fail with this message while it is set. */
  start?: string;
  /** Starts wait for this while it is set: a slow swap-in. */
  startHeld?: Promise<void>;
}

const RUNTIME: MachineRuntime = { python: '3.fake' };
let nextPid = 900_000;

/**
 * An in-memory `Engine`: the machine layer's tests run its queueing, timeouts, interrupts, crashes,
 * saves and checkpoints in milliseconds, under `node:test`'s mock timers. Its "Python" is a line
 * language, one statement a line:
 *
 *   NAME = JSON       sets a variable
 *   NAME              the cell's value: the variable, as JSON
 *   print TEXT        TEXT and a newline on stdout (`eprint`: stderr; `write`: without the newline)
 *   show TEXT         displays TEXT (a text/plain bundle)
 *   sleep MS          waits MS ms (timer time); an interrupt ends it with a KeyboardInterrupt
 *   stubborn          waits and ignores interrupts: only a stop ends it
 *   ask NAME          sets NAME to the answer `onInput` gives to the question NAME
 *   crash             the process dies (exit code 1)
 *   raise TEXT        the cell fails with TEXT
 *
 * Its state (the variables) is saved as JSON to the snapshot path, on the real disk.
 */
export class FakeEngine implements Engine {
  readonly name = 'python';
  readonly pid = nextPid++;
  runtime: MachineRuntime | undefined;
  readonly exited: Promise<EngineExit>;
  /** What the engine has run, in order: the cells' code. */
  readonly ran: string[] = [];
  #vars: Record<string, unknown> = {};
  #exit!: (exit: EngineExit) => void;
  #gone?: EngineExit;
  #waiting?: { interruptible: boolean; finish(outcome: 'interrupted' | 'exited'): void };

  constructor(
    readonly options: EngineOptions,
    private readonly faults: Faults,
  ) {
    this.exited = new Promise((resolve) => (this.#exit = resolve));
  }

  async start(): Promise<void> {
    await this.faults.startHeld;
    if (this.faults.start) throw new Error(this.faults.start);
    this.runtime = RUNTIME;
  }

  async restore(snapshotPath: string): Promise<RestoreReport> {
    if (this.faults.restore) throw new Error(this.faults.restore);
    this.#vars = JSON.parse(await readFile(snapshotPath, 'utf8')) as Record<string, unknown>;
    return { notices: [] };
  }

  async ready(): Promise<void> {}

  async run(code: string, _cell: number, { onOutput, onInput, onDisplay }: CellListeners): Promise<ExecResult> {
    this.#assertRunning();
    this.ran.push(code);
    let value: unknown = null;
    let written = 0;
    const print = (stream: 'stdout' | 'stderr', text: string) => {
      written += text.length;
      onOutput(stream, text);
    };
    for (const line of code
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)) {
      const [word, ...rest] = line.split(' ');
      const argument = rest.join(' ');
      const assignment = /^(\w+)\s*=\s*(.+)$/.exec(line);
      value = null;
      if (assignment) this.#vars[assignment[1]!] = JSON.parse(assignment[2]!);
      else if (word === 'print' || word === 'eprint') print(word === 'print' ? 'stdout' : 'stderr', `${argument}\n`);
      else if (word === 'write') print('stdout', argument);
      else if (word === 'show') onDisplay?.({ data: { 'text/plain': argument }, metadata: {}, output_chars: written });
      else if (word === 'raise') return { error: argument, runtime_ms: 0 };
      else if (word === 'crash') this.#die({ code: 1, signal: null, requested: false });
      else if (word === 'ask') {
        if (!onInput) return { error: 'EOFError: nobody to ask', runtime_ms: 0 };
        this.#vars[argument] = await onInput({ prompt: argument, password: false }, new AbortController().signal);
      } else if (word === 'sleep' || word === 'stubborn') {
        const outcome = await this.#wait(word === 'sleep' ? Number(argument) : undefined);
        if (outcome === 'interrupted') return { error: 'KeyboardInterrupt', runtime_ms: 0 };
      } else if (/^\w+$/.test(line)) {
        if (!(line in this.#vars)) return { error: `NameError: name '${line}' is not defined`, runtime_ms: 0 };
        value = JSON.stringify(this.#vars[line]);
      } else return { error: `SyntaxError: ${line}`, runtime_ms: 0 };
      this.#assertRunning();
    }
    return { value: value as string | null, data: null, runtime_ms: 0 };
  }

  interrupt(): void {
    if (this.#waiting?.interruptible) this.#waiting.finish('interrupted');
  }

  async command<Op extends KernelOp>(op: Op, _args: KernelArgs<Op>): Promise<KernelResult<Op>> {
    this.#assertRunning();
    if (op !== 'variables') throw new Error(`the fake engine has no command ${op}`);
    return Object.entries(this.#vars).map(([name, value]) => ({ name, type: typeof value, repr: JSON.stringify(value) })) as KernelResult<Op>;
  }

  async installPackages(packages: string[]): Promise<string> {
    return `installed ${packages.join(', ')}`;
  }

  async snapshot(path: string): Promise<SnapshotReport> {
    this.#assertRunning();
    if (this.faults.snapshot) throw Object.assign(new Error(`${this.faults.snapshot}: no space left on device, write`), { code: this.faults.snapshot });
    const text = JSON.stringify(this.#vars);
    await writeFile(path, text);
    return { lost: [], written: Promise.resolve({ bytes: Buffer.byteLength(text) }) };
  }

  async stop(): Promise<void> {
    this.#die({ code: null, signal: 'SIGKILL', requested: true });
  }

  /** Kills the process from outside, as the operating system would. */
  kill(): void {
    this.#die({ code: null, signal: 'SIGKILL', requested: false });
  }

  #wait(ms: number | undefined): Promise<'interrupted' | 'exited' | 'done'> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => finish('done'), ms);
      const finish = (outcome: 'interrupted' | 'exited' | 'done') => {
        clearTimeout(timer);
        this.#waiting = undefined;
        resolve(outcome);
      };
      this.#waiting = { interruptible: ms !== undefined, finish };
    });
  }

  #die(exit: EngineExit): void {
    if (this.#gone) return;
    this.#gone = exit;
    this.#waiting?.finish('exited');
    this.#exit(exit);
  }

  #assertRunning(): void {
    if (this.#gone) throw new EngineExitedError(this.#gone);
  }
}

/** An engine set whose only engine is the fake, registered as `python`; every engine made is kept in `made`. */
export function fakeEngines(): { engines: EngineSet; made: FakeEngine[]; faults: Faults } {
  const made: FakeEngine[] = [];
  const faults: Faults = {};
  const engines: EngineSet = {
    factories: {
      python: (options) => {
        const engine = new FakeEngine(options, faults);
        made.push(engine);
        return engine;
      },
    },
    status: () => [{ name: 'python', available: true, detail: 'the fake engine of the tests', warning: null, ready: 0 }],
    newestRuntime: () => undefined,
    snapshotRuntime: async () => undefined,
    assertStartable: async () => {},
    prewarm: () => {},
    close: async () => {},
  };
  return { engines, made, faults };
}
