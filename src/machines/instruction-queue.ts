import type { ExecResult, HistoryEntry, OutputChunk, SenderListeners } from '../shared/types.ts';
import { streamText } from '../shared/types.ts';
import { stoppedWithServerText } from '../shared/result-format.ts';
import type { HistoryLog } from './history-log.ts';
import type { MachineManifest } from './machine-store.ts';

/** The code of an instruction whose start a stopped node never committed. */
const UNKNOWN_CODE = '# The code of this instruction was lost with the node that ran it.';

/** How many finished instructions keep their output and result in memory. */
const RECENT_INSTRUCTIONS = 64;

/** An instruction as the machine's callers see it while it is queued, runs, and for a while after. */
export interface QueuedInstruction {
  readonly seq: number;
  readonly code: string;
  readonly timeoutSeconds: number;
  status: 'pending' | 'running' | 'done';
  readonly chunks: OutputChunk[];
  result?: ExecResult;
  readonly done: Promise<ExecResult>;
}

/** An instruction as the machine runs it. */
export interface QueueEntry extends QueuedInstruction {
  listeners: Set<(chunk: OutputChunk) => void>;
  resolve(result: ExecResult): void;
  cancelled?: string;
  /** Why its start is not in the history, when it is not. */
  unrecorded?: string;
  /** Whoever sent it: who answers its `input()` and sees its displays as they come, if they can. */
  sender: SenderListeners;
}

/**
 * A machine's instructions: the queue, the recent ones with their output (for `follow` and
 * `result`), the seq of the last one finished, and their record in the history log. Operations
 * that are not code (a rollback, an upgrade) are recorded among them as instructions of their own.
 */
export class InstructionQueue {
  readonly pending: QueueEntry[] = [];
  /** The one running, from its swap-in on. */
  current?: QueueEntry;
  /** The seq of the last instruction or operation that finished: what the machine's state holds. */
  completedSeq: number;
  #recent = new Map<number, QueueEntry>();

  constructor(
    private readonly manifest: MachineManifest,
    private readonly log: HistoryLog,
    private readonly onFinished: (seq: number, result: ExecResult) => void,
  ) {
    this.completedSeq = manifest.nextSeq - 1;
  }

  /** Nothing running or queued. */
  get isIdle(): boolean {
    return !this.current && this.pending.length === 0;
  }

  /** Queued and running. */
  get size(): number {
    return this.pending.length + (this.current ? 1 : 0);
  }

  /** A new instruction at the end of the queue, its start recorded. */
  add(code: string, timeoutSeconds: number, sender: SenderListeners = {}): QueueEntry {
    const seq = this.manifest.nextSeq++;
    const now = new Date();
    this.manifest.lastUsedAt = now.toISOString();
    let resolve!: (result: ExecResult) => void;
    const done = new Promise<ExecResult>((r) => (resolve = r));
    const instruction: QueueEntry = { seq, code, timeoutSeconds, status: 'pending', chunks: [], done, listeners: new Set(), resolve, sender };
    // A full disk does not stop the instruction (it may be what frees space); its result says it is not recorded.
    instruction.unrecorded = this.#record(() => this.log.started(seq, code, now));
    this.#recent.set(seq, instruction);
    for (const old of this.#recent.keys()) {
      if (this.#recent.size <= RECENT_INSTRUCTIONS) break;
      if (this.#recent.get(old)!.status === 'done') this.#recent.delete(old);
    }
    this.pending.push(instruction);
    return instruction;
  }

  /**
   * Takes `instruction` off the queue to run it: the current one from here on, its swap-in
   * included. One cancelled while it waited is finished instead, and answers false.
   */
  start(instruction: QueueEntry): boolean {
    this.pending.splice(this.pending.indexOf(instruction), 1);
    if (instruction.cancelled) {
      this.#finish(instruction, { error: `KeyboardInterrupt: ${instruction.cancelled}`, runtime_ms: 0 });
      return false;
    }
    this.current = instruction;
    instruction.status = 'running';
    return true;
  }

  /** A chunk of the current instruction's output: kept with it, and sent to whoever follows it. */
  output(instruction: QueueEntry, chunk: OutputChunk): void {
    instruction.chunks.push(chunk);
    for (const listener of instruction.listeners) listener(chunk);
  }

  /** Ends the current instruction with `outcome`. `ran`: its code ran, so the machine's state now holds its effects. */
  end(instruction: QueueEntry, outcome: ExecResult, ran: boolean): void {
    this.current = undefined;
    if (ran) this.completedSeq = instruction.seq;
    this.#finish(instruction, outcome);
  }

  /** Marks every queued instruction cancelled, with `reason` for its result; answers how many. */
  cancelPending(reason: string): number {
    for (const instruction of this.pending) instruction.cancelled = reason;
    return this.pending.length;
  }

  /** An instruction by seq, with output and result while it is recent. */
  get(seq: number): QueuedInstruction | undefined {
    return this.#recent.get(seq);
  }

  /**
   * Streams an instruction's output from its first chunk, then resolves with its result, or
   * rejects when `signal` aborts first. Older instructions come from the history (result only).
   */
  async follow(seq: number, onChunk: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult | undefined> {
    const live = this.#recent.get(seq);
    if (!live) return (await this.#historyEntry(seq))?.result;
    for (const chunk of live.chunks) onChunk(chunk);
    if (live.status !== 'done') {
      live.listeners.add(onChunk);
      // A follower that stops (a view's poll) lets go of the instruction, which runs on.
      let stop: (() => void) | undefined;
      const stopped = new Promise<never>((_, reject) => {
        stop = () => reject(signal!.reason);
        signal?.addEventListener('abort', stop, { once: true });
      });
      try {
        signal?.throwIfAborted();
        return await Promise.race([live.done, stopped]);
      } finally {
        live.listeners.delete(onChunk);
        if (stop) signal?.removeEventListener('abort', stop);
      }
    }
    return live.result;
  }

  /** The result of an instruction, waiting for it when it has not finished. */
  async result(seq: number): Promise<ExecResult | undefined> {
    const live = this.#recent.get(seq);
    if (live) return live.done;
    return (await this.#historyEntry(seq))?.result;
  }

  history(last?: number): Promise<HistoryEntry[]> {
    return this.log.read(last);
  }

  /** Records an instruction's outcome and hands it to whoever waits for it. */
  #finish(instruction: QueueEntry, outcome: ExecResult): void {
    const unrecorded = this.#record(() =>
      this.log.finished(instruction.seq, outcome, streamText(instruction.chunks, 'stdout'), streamText(instruction.chunks, 'stderr')),
    );
    const why = instruction.unrecorded ?? unrecorded;
    const result = why ? withNotice(outcome, why) : outcome;
    instruction.status = 'done';
    instruction.result = result;
    instruction.resolve(result);
    this.announce(instruction.seq, result);
  }

  /**
   * Records an operation that has happened (a rollback, an upgrade) as an instruction of its own,
   * `code` a comment that names it: it takes the next seq and is the machine's last completed one.
   * What cannot be recorded is said in the result it answers, not thrown. Once the operation is
   * complete, `announce` tells the machine's watchers.
   */
  recordOperation(code: string, result: ExecResult, at = new Date()): { seq: number; result: ExecResult } {
    const seq = this.manifest.nextSeq++;
    this.manifest.lastUsedAt = at.toISOString();
    this.completedSeq = seq;
    const unrecorded = this.#record(() => {
      this.log.started(seq, code, at);
      this.log.finished(seq, result, '', '');
    });
    return { seq, result: unrecorded ? withNotice(result, unrecorded) : result };
  }

  /** Tells the machine's watchers that an instruction or operation finished, with `result`. */
  announce(seq: number, result: ExecResult): void {
    this.onFinished(seq, result);
  }

  /**
   * After the server stopped while instructions ran: ends each one the history shows started and
   * never finished, its error saying what the machine went back to (`restored`), for as long as
   * the history is kept; and records each of those `given` out (in a cluster, by a node that
   * stopped before it committed them) that the history lacks.
   */
  async endUnfinished(restored: string, given?: { from: number; to: number }): Promise<void> {
    const result = { error: stoppedWithServerText(restored), runtime_ms: 0 };
    const seen = new Set<number>();
    for (const entry of await this.log.read()) {
      seen.add(entry.seq);
      if (!entry.result) this.#record(() => this.log.finished(entry.seq, result, '', ''));
    }
    for (let seq = given?.from ?? 0; given && seq <= given.to; seq++) {
      if (seen.has(seq)) continue;
      this.#record(() => {
        this.log.started(seq, UNKNOWN_CODE, new Date());
        this.log.finished(seq, result, '', '');
      });
    }
  }

  close(): void {
    this.log.close();
  }

  /** Runs a write to the history; when it fails, answers the notice that says what is missing. */
  #record(write: () => void): string | undefined {
    try {
      write();
      return undefined;
    } catch (error) {
      return `This is not in the machine's history: ${(error as Error).message}. Its result is kept in memory only.`;
    }
  }

  async #historyEntry(seq: number): Promise<HistoryEntry | undefined> {
    const entry = (await this.log.read()).find((e) => e.seq === seq);
    if (entry && !entry.result) {
      // Started but never finished: the server stopped while it ran (and this server has not said so yet).
      entry.result = { error: stoppedWithServerText(), runtime_ms: 0 };
    }
    return entry;
  }
}

/** `result` with one more notice. */
export function withNotice(result: ExecResult, notice: string): ExecResult {
  return { ...result, data: { ...(result.data ?? {}), notices: [...(result.data?.notices ?? []), notice] } } as ExecResult;
}
