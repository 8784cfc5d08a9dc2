import { EngineExitedError, type Engine, type KernelDisplay, type OutputListener } from '../engines/engine.ts';
import { isTimeoutError, timedOutText } from '../shared/result-format.ts';
import type { ExecResult, InputAnswerer, MachineState } from '../shared/types.ts';
import type { InstructionQueue, QueueEntry } from './instruction-queue.ts';
import type { MachineEngine } from './machine-engine.ts';
import type { MachineNotices } from './machine-notices.ts';
import { OutputLines } from './output-lines.ts';
import type { StateSaver } from './state-saver.ts';

/** What an instruction's run uses of its machine. */
export interface RunParts {
  queue: InstructionQueue;
  engine: MachineEngine;
  notices: MachineNotices;
  saver: StateSaver;
  /** Time between an interrupt and the hard stop of code that ignores it. */
  interruptGraceMs: number;
  setState(state: MachineState): void;
  /** The machine was deleted while the instruction ran. */
  isDeleted(): boolean;
}

type StopReason = 'timeout' | 'interrupt';

/**
 * One instruction's life on its machine, in the order it happens: taken off the queue, the
 * machine warmed (swapped in when it is out), the code run under its timeout with its output
 * passed on, and the result finished: recorded, handed to whoever waits, the machine due for a
 * save. A stop (its timeout, or an interrupt) may come at any point: before the code starts it
 * ends the instruction there; while the code runs it interrupts it, and stops the engine if the
 * code ignores that for the grace period.
 */
export class InstructionRun {
  #stopReason?: StopReason;
  #graceTimer?: NodeJS.Timeout;

  constructor(
    private readonly instruction: QueueEntry,
    private readonly parts: RunParts,
  ) {}

  /** Runs the instruction to its result. */
  async perform(): Promise<void> {
    if (!this.parts.queue.start(this.instruction)) return;
    const engine = await this.#warm();
    if (!engine) return;
    this.parts.setState('busy');
    this.#finish(await this.#run(engine));
  }

  /** Whether a stop was asked for (one is enough). */
  get stopping(): boolean {
    return this.#stopReason !== undefined;
  }

  /** Interrupts the instruction, and hard-stops the engine if the code ignores it. */
  stop(reason: StopReason): void {
    this.#stopReason ??= reason;
    const engine = this.parts.engine.current;
    if (!engine || this.parts.queue.current !== this.instruction) return;
    engine.interrupt();
    clearTimeout(this.#graceTimer);
    this.#graceTimer = setTimeout(() => {
      if (this.parts.queue.current === this.instruction) void engine.stop();
    }, this.parts.interruptGraceMs);
  }

  /** The machine's engine, swapped in if need be; undefined when the instruction ended here. */
  async #warm(): Promise<Engine | undefined> {
    const { queue, engine: slot, setState } = this.parts;
    let engine: Engine;
    try {
      engine = await slot.warm();
    } catch (error) {
      queue.end(this.instruction, { error: `Could not start the machine: ${(error as Error).message}`, runtime_ms: 0 }, false);
      return undefined;
    }
    if (this.#stopReason) {
      queue.end(this.instruction, { error: 'KeyboardInterrupt: it was interrupted before it started', runtime_ms: 0 }, false);
      setState('warm');
      return undefined;
    }
    return engine;
  }

  /** The code run on `engine` under its timeout, which waits while a person answers `input()`. */
  async #run(engine: Engine): Promise<ExecResult> {
    const { instruction } = this;
    const { queue, engine: slot } = this.parts;
    const lines = new OutputLines((chunk) => queue.output(instruction, chunk));
    const onOutput: OutputListener = (stream, text) => lines.push(stream, text);
    // A timeout of 0 is no limit.
    const limited = instruction.timeoutSeconds > 0;
    const timeout = () => this.stop('timeout');
    let timeLeft = instruction.timeoutSeconds * 1000;
    let since = Date.now();
    let timer = limited ? setTimeout(timeout, timeLeft) : undefined;
    const { onInput: asker, onDisplay: shown } = instruction.sender;
    const onInput: InputAnswerer | undefined =
      asker &&
      (async (request, signal) => {
        clearTimeout(timer);
        timeLeft -= Date.now() - since;
        try {
          return await asker(request, signal);
        } finally {
          since = Date.now();
          if (!signal.aborted && limited) timer = setTimeout(timeout, timeLeft);
        }
      });
    const started = performance.now();
    let result: ExecResult;
    try {
      const onDisplay = shown && ((entry: KernelDisplay) => shown(lines.placeLive(entry)));
      result = await engine.run(instruction.code, instruction.seq, { onOutput, onInput, onDisplay });
      slot.dirty = true;
    } catch (error) {
      result = { error: this.#failure(error), runtime_ms: Math.round(performance.now() - started) };
      if (error instanceof EngineExitedError) slot.drop(engine);
    } finally {
      clearTimeout(timer);
      clearTimeout(this.#graceTimer);
      lines.end();
    }
    lines.placeDisplays(result.data);
    if (this.#stopReason === 'timeout' && !('error' in result && isTimeoutError(result.error))) {
      const detail = 'error' in result ? `\n${result.error}` : '';
      result = { error: `${timedOutText(instruction.timeoutSeconds)}: the instruction was interrupted.${detail}`, runtime_ms: result.runtime_ms };
    }
    return result;
  }

  /** The result recorded and handed on, with what the machine has to say; the machine due for a save. */
  #finish(result: ExecResult): void {
    const { queue, engine, notices, saver, setState } = this.parts;
    queue.end(this.instruction, notices.attach(result), true);
    setState(engine.current ? 'warm' : 'swapped');
    saver.schedule();
  }

  /** What a run that threw says: its process ended (asked to, by a stop, or not), or something else failed. */
  #failure(error: unknown): string {
    if (this.parts.isDeleted()) return 'The machine was deleted while this instruction ran: it stopped, and nothing of the machine is kept.';
    if (!(error instanceof EngineExitedError)) return `Perennial could not run the instruction: ${(error as Error).message}`;
    const restore = this.parts.notices.restoreNotice();
    if (error.exit.requested && this.#stopReason) {
      const what = this.#stopReason === 'timeout' ? timedOutText(this.instruction.timeoutSeconds) : 'Interrupted';
      return `${what}: the code did not stop within ${this.parts.interruptGraceMs / 1000} s of the interrupt, so its Python process was stopped. ${restore}`;
    }
    return `${error.message}. ${restore}`;
  }
}
