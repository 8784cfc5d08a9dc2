import { stat, unlink } from 'node:fs/promises';
import {
  AlreadyCurrentError,
  EngineExitedError,
  type Engine,
  type EngineFactory,
  type OutputListener,
} from '../engines/engine.ts';
import type {
  CheckpointInfo,
  ExecResult,
  HistoryEntry,
  LostItem,
  MachineInfo,
  MachineState,
  OutputChunk,
  ResultData,
  UpgradeResult,
} from '../shared/types.ts';
import { streamText } from '../shared/types.ts';
import { describeRuntime } from '../shared/result-format.ts';
import { CheckpointStore, type CheckpointSource } from './checkpoint-store.ts';
import type { HistoryLog } from './history-log.ts';
import type { MachineManifest, MachineStore } from './machine-store.ts';
import { OutputLines } from './output-lines.ts';

/** Tunables a machine takes from its manager. */
export interface MachineSettings {
  /** Bytes of output kept per instruction. */
  outputLimit: number;
  /** Time between an interrupt and the hard stop of code that ignores it. */
  interruptGraceMs: number;
  /** Quiet time after an instruction before the machine's state is checkpointed to disk. */
  checkpointDelayMs: number;
  /** How many automatic checkpoints (one per save of a changed state) a machine keeps. */
  autoCheckpoints: number;
}

/** No checkpoint of the machine has that id or label. */
export class CheckpointNotFoundError extends Error {
  static readonly errorCode = 'CheckpointNotFound';
  constructor(machine: string, checkpoint: string) {
    super(`Machine ${machine} has no checkpoint "${checkpoint}" (list them to see their ids and labels)`);
    this.name = 'CheckpointNotFoundError';
  }
}

/**
 * The machine's state could not be saved for an operation (a full disk, most often); nothing was
 * changed: the machine runs on, and its saved state and checkpoints are whole.
 */
export class NotSavedError extends Error {
  static readonly errorCode = 'NotSaved';
  constructor(what: string, reason: string) {
    super(`Could not ${what}: ${reason}. Nothing was changed: the machine runs on as it was, and its saved state and checkpoints are whole.`);
    this.name = 'NotSavedError';
  }
}

/** How many finished instructions keep their output and result in memory. */
const RECENT_INSTRUCTIONS = 64;

export interface Instruction {
  readonly seq: number;
  readonly code: string;
  readonly timeoutSeconds: number;
  status: 'pending' | 'running' | 'done';
  readonly chunks: OutputChunk[];
  result?: ExecResult;
  readonly done: Promise<ExecResult>;
}

/** An engine a rollback starts before the old one has stopped; `restored` once it holds the checkpoint's state. */
interface EngineAhead {
  engine: Engine;
  restored: boolean;
  /** What the restore has for the next result. */
  notices: string[];
}

interface LiveInstruction extends Instruction {
  listeners: Set<(chunk: OutputChunk) => void>;
  resolve(result: ExecResult): void;
  cancelled?: string;
  stopReason?: 'timeout' | 'interrupt';
  /** Why its start is not in the history, when it is not. */
  unrecorded?: string;
}

export type MachineChange =
  | { type: 'state'; state: MachineState }
  | { type: 'instruction'; seq: number; result: ExecResult }
  | { type: 'checkpoint'; bytes: number }
  | { type: 'error'; message: string };

/** The machine cannot be upgraded (it is on the newest runtime, or its engine has none to move to); nothing was changed. */
export class UpgradeRefusedError extends Error {
  static readonly errorCode = 'UpgradeRefused';
  constructor(machine: string, why: string) {
    super(`Machine ${machine} cannot be upgraded: ${why}.`);
    this.name = 'UpgradeRefusedError';
  }
}

/** The machine was deleted while something waited for it. */
export class MachineGoneError extends Error {
  static readonly errorCode = 'MachineNotFound';
  constructor(readonly machine: string) {
    super(`Machine ${machine} does not exist (it may have been deleted)`);
    this.name = 'MachineGoneError';
  }
}

/**
 * One machine: its engine (when warm), its FIFO of instructions and everything that can happen to
 * it — timeouts, interrupts, crashes, checkpoints, swap out and in. Every engine call goes through
 * one serial queue, so instructions, introspection and snapshots never overlap.
 */
export class Machine {
  #state: MachineState = 'swapped';
  #engine?: Engine;
  #ops: Promise<unknown> = Promise.resolve();
  #pending: LiveInstruction[] = [];
  #current?: LiveInstruction;
  #recent = new Map<number, LiveInstruction>();
  #history: HistoryLog;
  #checkpoints: CheckpointStore;
  #completedSeq: number;
  #dirty = false;
  #notices: string[] = [];
  #lost: LostItem[] = [];
  #checkpointTimer?: NodeJS.Timeout;
  #deleted = false;
  /** Why the last snapshot failed; the machine then stays warm rather than lose its state. */
  #swapError: string | null = null;

  constructor(
    readonly manifest: MachineManifest,
    private readonly store: MachineStore,
    private readonly createEngine: EngineFactory,
    private readonly settings: MachineSettings,
    private readonly onChange: (machine: Machine, change: MachineChange) => void,
  ) {
    this.#history = store.history(manifest.name);
    this.#checkpoints = new CheckpointStore(store.checkpointsDir(manifest.name));
    this.#completedSeq = manifest.nextSeq - 1;
  }

  get name(): string {
    return this.manifest.name;
  }

  get state(): MachineState {
    return this.#state;
  }

  /** The engine's process while the machine is warm. */
  get pid(): number | undefined {
    return this.#engine?.pid;
  }

  get isWarm(): boolean {
    return this.#engine !== undefined;
  }

  /** Nothing running or queued. */
  get isIdle(): boolean {
    return !this.#current && this.#pending.length === 0;
  }

  info(): MachineInfo {
    const m = this.manifest;
    return {
      name: m.name,
      createdAt: m.createdAt,
      tags: { ...m.tags },
      engine: m.engine,
      memoryMb: m.memoryMb,
      state: this.#state,
      nextSeq: m.nextSeq,
      pendingInstructions: this.#pending.length + (this.#current ? 1 : 0),
      lastUsedAt: m.lastUsedAt,
      snapshot: m.snapshot,
      runtime: m.runtime ?? null,
      upgradeTo: null,
      warnings: [
        ...(m.rebuilt ? [m.rebuilt] : []),
        ...(this.#swapError ? [`It cannot be swapped out, so it stays in memory: ${this.#swapError}`] : []),
      ],
    };
  }

  /** Queues an instruction and returns it at once; `done` settles with its result. */
  exec(code: string, timeoutSeconds: number): Instruction {
    this.#assertAlive();
    const seq = this.manifest.nextSeq++;
    const now = new Date();
    this.manifest.lastUsedAt = now.toISOString();
    let resolve!: (result: ExecResult) => void;
    const done = new Promise<ExecResult>((r) => (resolve = r));
    const instruction: LiveInstruction = {
      seq,
      code,
      timeoutSeconds,
      status: 'pending',
      chunks: [],
      done,
      listeners: new Set(),
      resolve,
    };
    // A full disk does not stop the instruction (it may be what frees space); its result says it is not recorded.
    instruction.unrecorded = this.#record(() => this.#history.started(seq, code, now));
    this.#recent.set(seq, instruction);
    for (const old of this.#recent.keys()) {
      if (this.#recent.size <= RECENT_INSTRUCTIONS) break;
      if (this.#recent.get(old)!.status === 'done') this.#recent.delete(old);
    }
    this.#pending.push(instruction);
    this.#clearCheckpoint();
    void this.#serial(() => this.#run(instruction));
    return instruction;
  }

  /** An instruction of this machine by seq, with output and result while it is recent. */
  instruction(seq: number): Instruction | undefined {
    return this.#recent.get(seq);
  }

  /**
   * Streams an instruction's output from its first chunk, then resolves with its result.
   * Older instructions come from the history (result only).
   */
  async follow(seq: number, onChunk: (chunk: OutputChunk) => void): Promise<ExecResult | undefined> {
    const live = this.#recent.get(seq);
    if (!live) return (await this.#historyEntry(seq))?.result;
    for (const chunk of live.chunks) onChunk(chunk);
    if (live.status !== 'done') {
      live.listeners.add(onChunk);
      try {
        return await live.done;
      } finally {
        live.listeners.delete(onChunk);
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
    return this.#history.read(last);
  }

  /** Cancels queued instructions and interrupts the running one (escalating to a hard stop). */
  interrupt(): { cancelled: number; interrupted: boolean } {
    const cancelled = this.#pending.length;
    for (const instruction of this.#pending) instruction.cancelled = 'it was cancelled by an interrupt before it started';
    const running = this.#current;
    if (running && !running.stopReason) this.#stop(running, 'interrupt');
    return { cancelled, interrupted: running !== undefined };
  }

  /**
   * Called when the data dir's previous owner stopped without saving: the first result then says
   * which instructions' effects did not survive.
   */
  noteUncleanStop(): void {
    const from = this.manifest.snapshot?.seq ?? 0;
    const unsaved = this.manifest.unsaved;
    if (unsaved) this.#notices.push(`When the server stopped (${unsaved.at}), this machine could not be saved: ${unsaved.reason}. ${this.#restoreNotice()}`);
    else if (this.#completedSeq >= from) this.#notices.push(`The server stopped unexpectedly. ${this.#restoreNotice()}`);
  }

  /** Called when the server stops and this machine's state could not be saved: the next start says why. */
  async noteUnsavedAtStop(reason: string): Promise<void> {
    this.manifest.unsaved = { at: new Date().toISOString(), reason };
    await this.store.save(this.manifest).catch(() => {});
  }

  /** Called when the manifest was just rebuilt: the first result says so, and what was reset. */
  noteRebuilt(): void {
    if (this.manifest.rebuilt) this.#notices.push(this.manifest.rebuilt);
  }

  /**
   * Runs `task` against a warm engine, in turn with instructions. A task that `changesState`
   * (writing a file, installing a package) makes the machine due for a checkpoint.
   */
  withEngine<T>(task: (engine: Engine) => Promise<T>, changesState = false): Promise<T> {
    this.#assertAlive();
    return this.#serial(async () => {
      const result = await task(await this.#warm());
      if (changesState) {
        this.#dirty = true;
        this.#scheduleCheckpoint();
      }
      return result;
    });
  }

  /** Writes the state to disk if anything changed since the last snapshot. */
  checkpoint(): Promise<void> {
    this.#clearCheckpoint();
    return this.#serial(() => this.#snapshot());
  }

  /** Saves the state and stops the engine. The next use swaps it back in. */
  swapOut(): Promise<void> {
    this.#clearCheckpoint();
    return this.#serial(async () => {
      if (!this.#engine) return;
      await this.#snapshot();
      await this.#stopEngine();
    });
  }

  /**
   * Saves the state if it changed, then gives `task` what it is made of, in turn with instructions.
   * `what` names the operation in a `NotSavedError` when either fails; `autoCheckpoint` false: the
   * task keeps that state itself, so the save makes no automatic checkpoint of it.
   */
  withSavedState<T>(what: string, task: (source: CheckpointSource) => Promise<T>, autoCheckpoint = true): Promise<T> {
    this.#assertAlive();
    this.#clearCheckpoint();
    return this.#serial(async () => {
      try {
        await this.#snapshot({ autoCheckpoint });
        return await task(await this.#source());
      } catch (error) {
        throw new NotSavedError(what, (error as Error).message);
      }
    });
  }

  /** Takes a named (or unnamed) checkpoint of the current state. */
  takeCheckpoint(label: string | null): Promise<CheckpointInfo> {
    return this.withSavedState(`take a checkpoint of machine ${this.name}`, (source) => this.#checkpoints.add(source, label, false), false);
  }

  checkpoints(): Promise<CheckpointInfo[]> {
    this.#assertAlive();
    return this.#checkpoints.list();
  }

  async deleteCheckpoint(idOrLabel: string): Promise<void> {
    this.#assertAlive();
    await this.#serial(async () => {
      const found = await this.#checkpoints.find(idOrLabel);
      if (!found) throw new CheckpointNotFoundError(this.name, idOrLabel);
      await this.#checkpoints.remove(found.id);
    });
  }

  /**
   * Returns the machine to a checkpoint: its state and (python engine) its files. What runs is
   * interrupted first; the state being left is saved as an automatic checkpoint, so the rollback
   * can itself be undone; the history records it as an instruction of its own.
   */
  async rollback(idOrLabel: string): Promise<{ checkpoint: CheckpointInfo; seq: number }> {
    this.#assertAlive();
    const target = await this.#checkpoints.find(idOrLabel);
    if (!target) throw new CheckpointNotFoundError(this.name, idOrLabel);
    this.interrupt();
    this.#clearCheckpoint();
    // So that a rollback costs no more than a swap-in, the next engine starts now, while what runs
    // stops, the state being left is saved and the checkpoint is put in place. When the machine's
    // files are in its snapshot (sandbox), it loads the checkpoint's state meanwhile too.
    const ahead = this.#engineAhead(this.#ownFiles() === null ? await this.#checkpoints.snapshotOf(target.id) : null);
    ahead.catch(() => {});
    return this.#serial(async () => {
      let checkpoint: CheckpointInfo | undefined;
      let left: string | null = null;
      let old: Engine | undefined;
      try {
        // By id: the checkpoint the label named when asked, which the engine ahead loads.
        checkpoint = await this.#checkpoints.find(target.id);
        if (!checkpoint) throw new CheckpointNotFoundError(this.name, idOrLabel);
        try {
          // The automatic checkpoint of the state being left must not prune the one rolled back to.
          await this.#snapshot({ spare: checkpoint.id });
        } catch (error) {
          // Only a state already gone (its process died) may be left unsaved: a rollback can be undone.
          if (!(error instanceof EngineExitedError)) throw new NotSavedError(`roll machine ${this.name} back: the state it would leave could not be saved first`, (error as Error).message);
          left = error.message;
        }
        // A python engine's old process stops before its files are replaced. A sandbox one, whose
        // state is all in its snapshot, stops once the next is up: its exit would slow that load.
        if (this.#ownFiles() === null) [old, this.#engine] = [this.#engine, undefined];
        else await this.#stopEngine();
        await this.#checkpoints.restore(checkpoint.id, this.store.snapshotPath(this.name), this.#ownFiles()).catch((error: Error) => {
          throw new NotSavedError(`roll machine ${this.name} back`, error.message);
        });
      } catch (error) {
        void ahead.then(({ engine }) => engine.stop()).catch(() => {});
        this.#engine ??= old;
        throw error;
      }
      const seq = this.manifest.nextSeq++;
      const at = new Date();
      const size = (await stat(this.store.snapshotPath(this.name)).catch(() => null))?.size;
      this.manifest.snapshot = size === undefined ? null : { at: at.toISOString(), seq: seq + 1, bytes: size };
      this.manifest.lastUsedAt = at.toISOString();
      this.#completedSeq = seq;
      this.#dirty = false;
      // Failing to come back is the next instruction's to report, as after a swap.
      const warming = this.#warm(ahead).catch(() => {});
      const named = `checkpoint ${checkpoint.id}${checkpoint.label ? ` ("${checkpoint.label}")` : ''}`;
      let result: ExecResult = {
        value: null,
        data: { notices: [`Rolled back to ${named}, taken before instruction ${checkpoint.seq} at ${checkpoint.at}.${left ? ` The state it left could not be saved first (${left}).` : ''}`] },
        runtime_ms: 0,
      };
      // The rollback has happened: what cannot be recorded now is said, not thrown.
      const unrecorded = this.#record(() => {
        this.#history.started(seq, `# perennial: rollback to ${named}`, at);
        this.#history.finished(seq, result, '', '');
      });
      await this.store.save(this.manifest).catch((error: Error) => (result = withNotice(result, `The machine's record could not be updated (${error.message}).`)));
      if (unrecorded) result = withNotice(result, unrecorded);
      await warming;
      void old?.stop();
      if (!this.#engine) this.#setState('swapped');
      this.onChange(this, { type: 'instruction', seq, result });
      return { checkpoint, seq };
    });
  }

  /**
   * Moves the machine onto the newest runtime this Perennial ships (a sandbox machine made on an
   * older Pyodide), in turn with instructions. A named checkpoint keeps the state it leaves, on the
   * runtime it leaves, to roll back to; the history records the upgrade and what it could not carry.
   */
  upgrade(): Promise<UpgradeResult> {
    this.#assertAlive();
    this.#clearCheckpoint();
    return this.#serial(async () => {
      const engine = await this.#warm();
      if (!engine.upgrade) throw new UpgradeRefusedError(this.name, `its ${engine.name} engine runs the interpreter it was given (${describeRuntime(engine.runtime)}); there is nothing to upgrade`);
      const leaving = describeRuntime(engine.runtime);
      try {
        await this.#snapshot({ autoCheckpoint: false });
      } catch (error) {
        throw new NotSavedError(`upgrade machine ${this.name}: the state it would leave could not be saved first`, (error as Error).message);
      }
      const checkpoint = await this.#checkpoints.add(await this.#source(), `before-upgrade-from-${engine.runtime?.pyodide ?? engine.runtime?.python ?? 'unknown'}`, false).catch((error: Error) => {
        throw new NotSavedError(`upgrade machine ${this.name}: no checkpoint of the state it would leave could be taken`, error.message);
      });
      let report;
      try {
        report = await engine.upgrade();
      } catch (error) {
        await this.#checkpoints.remove(checkpoint.id).catch(() => {});
        if (error instanceof AlreadyCurrentError) throw new UpgradeRefusedError(this.name, error.message);
        throw new Error(`Could not upgrade machine ${this.name} from ${leaving}: ${(error as Error).message}. Nothing was changed: it runs on as it was.`, { cause: error });
      }
      this.#dirty = true;
      this.manifest.runtime = report.to;
      const seq = this.manifest.nextSeq++;
      const at = new Date();
      this.manifest.lastUsedAt = at.toISOString();
      const notice = `Upgraded from ${describeRuntime(report.from)} to ${describeRuntime(report.to)}; checkpoint ${checkpoint.id} ("${checkpoint.label}") holds the state before, on ${describeRuntime(report.from)}.`;
      let result: ExecResult = { value: null, data: { notices: [notice], ...(report.lost.length ? { lost: report.lost } : {}) }, runtime_ms: 0 };
      const unrecorded = this.#record(() => {
        this.#history.started(seq, `# perennial: upgrade to ${describeRuntime(report.to)}`, at);
        this.#history.finished(seq, result, '', '');
      });
      if (unrecorded) result = withNotice(result, unrecorded);
      this.#completedSeq = seq;
      // The upgraded state is saved now: the next swap-in must not go back to the old runtime.
      await this.#snapshot().catch((error: Error) => this.onChange(this, { type: 'error', message: `the upgraded state could not be saved yet: ${error.message}` }));
      this.onChange(this, { type: 'instruction', seq, result });
      return { from: report.from, to: report.to, lost: report.lost, checkpoint, seq };
    });
  }

  /** Stops everything and removes the machine's files. */
  async delete(): Promise<void> {
    this.#deleted = true;
    this.#clearCheckpoint();
    for (const instruction of this.#pending) instruction.cancelled = 'the machine was deleted';
    const engine = this.#engine;
    this.#engine = undefined;
    await engine?.stop();
    await this.#ops.catch(() => {});
    this.#history.close();
    await this.store.remove(this.name);
  }

  /** Stops the engine without saving, for a server that is going away after `checkpoint()`. */
  async close(): Promise<void> {
    this.#clearCheckpoint();
    await this.#stopEngine();
    this.#history.close();
  }

  // ---- internals ------------------------------------------------------------------------------

  #serial<T>(task: () => Promise<T>): Promise<T> {
    const next = this.#ops.then(task);
    this.#ops = next.catch(() => {});
    return next;
  }

  async #run(instruction: LiveInstruction): Promise<void> {
    this.#pending.splice(this.#pending.indexOf(instruction), 1);
    if (instruction.cancelled) {
      this.#finish(instruction, { error: `KeyboardInterrupt: ${instruction.cancelled}`, runtime_ms: 0 });
      return;
    }
    // Current from here on, so that an interrupt during the swap-in reaches it.
    this.#current = instruction;
    instruction.status = 'running';
    let engine: Engine;
    try {
      engine = await this.#warm();
    } catch (error) {
      this.#current = undefined;
      this.#finish(instruction, { error: `Could not start the machine: ${(error as Error).message}`, runtime_ms: 0 });
      return;
    }
    if (instruction.stopReason) {
      this.#current = undefined;
      this.#finish(instruction, { error: 'KeyboardInterrupt: it was interrupted before it started', runtime_ms: 0 });
      this.#setState('warm');
      return;
    }
    this.#setState('busy');
    const lines = new OutputLines((chunk) => {
      instruction.chunks.push(chunk);
      for (const listener of instruction.listeners) listener(chunk);
    });
    const onOutput: OutputListener = (stream, text) => lines.push(stream, text);
    const timer = setTimeout(() => this.#stop(instruction, 'timeout'), instruction.timeoutSeconds * 1000);
    const started = performance.now();
    let result: ExecResult;
    try {
      result = await engine.run(instruction.code, instruction.seq, onOutput);
      this.#dirty = true;
    } catch (error) {
      result = { error: this.#describeFailure(instruction, error), runtime_ms: Math.round(performance.now() - started) };
      if (error instanceof EngineExitedError) this.#dropEngine(engine);
    } finally {
      clearTimeout(timer);
      clearTimeout(this.#graceTimer);
      lines.end();
    }
    if (instruction.stopReason === 'timeout' && !('error' in result && result.error.startsWith('Timed out'))) {
      const detail = 'error' in result ? `\n${result.error}` : '';
      result = { error: `Timed out after ${instruction.timeoutSeconds} s: the instruction was interrupted.${detail}`, runtime_ms: result.runtime_ms };
    }
    this.#current = undefined;
    this.#completedSeq = instruction.seq;
    this.#finish(instruction, this.#withNotices(result));
    this.#setState(this.#engine ? 'warm' : 'swapped');
    this.#scheduleCheckpoint();
  }

  #graceTimer?: NodeJS.Timeout;

  /** Interrupts the running instruction, and hard-stops the engine if the code ignores it. */
  #stop(instruction: LiveInstruction, reason: 'timeout' | 'interrupt'): void {
    instruction.stopReason ??= reason;
    const engine = this.#engine;
    if (!engine || this.#current !== instruction) return;
    engine.interrupt();
    clearTimeout(this.#graceTimer);
    this.#graceTimer = setTimeout(() => {
      if (this.#current === instruction) void engine.stop();
    }, this.settings.interruptGraceMs);
  }

  #describeFailure(instruction: LiveInstruction, error: unknown): string {
    if (!(error instanceof EngineExitedError)) return `Perennial could not run the instruction: ${(error as Error).message}`;
    const restore = this.#restoreNotice();
    if (error.exit.requested && instruction.stopReason) {
      const what = instruction.stopReason === 'timeout' ? `Timed out after ${instruction.timeoutSeconds} s` : 'Interrupted';
      return `${what}: the code did not stop within ${this.settings.interruptGraceMs / 1000} s of the interrupt, so its Python process was stopped. ${restore}`;
    }
    return `${error.message}. ${restore}`;
  }

  #restoreNotice(): string {
    const snapshot = this.manifest.snapshot;
    if (!snapshot) return 'The machine starts again empty: it had no snapshot yet.';
    const lost = this.#completedSeq >= snapshot.seq ? ` Effects of instructions ${snapshot.seq}–${this.#completedSeq} are lost.` : '';
    return `The machine goes back to its snapshot of ${snapshot.at}.${lost}`;
  }

  /**
   * A new engine, started, and restored from `snapshot` when one is given. When that restore
   * fails the engine is stopped and the error is the promise's: `#warm` then starts afresh.
   */
  async #engineAhead(snapshot: string | null): Promise<EngineAhead> {
    const engine = await this.#startEngine();
    if (!snapshot) return { engine, restored: false, notices: [] };
    try {
      return { engine, restored: true, ...(await engine.restore(snapshot)) };
    } catch (error) {
      await engine.stop();
      throw error;
    }
  }

  async #startEngine(): Promise<Engine> {
    const engine = this.createEngine({
      memoryMb: this.manifest.memoryMb,
      outputLimit: this.settings.outputLimit,
      workdir: this.store.filesDir(this.name),
      python: this.manifest.python,
      workspace: this.manifest.workspace,
      network: this.manifest.network,
    });
    await engine.start();
    return engine;
  }

  /**
   * Starts the engine, swapping the machine in from its snapshot when it has one. `ahead`: an
   * engine a rollback started (and perhaps restored) early, used when it came up.
   */
  async #warm(ahead?: Promise<EngineAhead>): Promise<Engine> {
    if (this.#engine) {
      void ahead?.then(({ engine }) => engine.stop(), () => {});
      return this.#engine;
    }
    const early = await ahead?.catch(() => undefined);
    const engine = early?.engine ?? (await this.#startEngine());
    if (early?.restored) this.#notices.push(...early.notices);
    else if (await this.store.hasSnapshot(this.name)) {
      try {
        this.#notices.push(...(await engine.restore(this.store.snapshotPath(this.name))).notices);
      } catch (error) {
        await engine.stop();
        // A snapshot of another engine build is sound, just not for this build: refuse, and
        // leave the machine untouched for the version that made it.
        if ((error as { constructor: { errorCode?: string } }).constructor.errorCode === 'SnapshotVersionMismatch') throw error;
        // Keep the unreadable snapshot for inspection and carry on from an empty machine.
        const kept = (await this.store.setAside(this.store.snapshotPath(this.name))) ?? this.store.snapshotPath(this.name);
        this.#lost.push({ name: '*', reason: `the snapshot could not be restored (${(error as Error).message}); it was kept as ${kept}` });
        this.manifest.snapshot = null;
        return this.#warm();
      }
    }
    try {
      // A fresh sandbox machine loads here (the first one builds the base image): before an
      // instruction's timeout starts, which counts running the code only.
      await engine.ready();
    } catch (error) {
      await engine.stop();
      throw error;
    }
    if (this.#deleted) {
      await engine.stop();
      throw new MachineGoneError(this.name);
    }
    this.#engine = engine;
    this.#dirty = false;
    // Written with the manifest's next save, as the machine's state is.
    if (engine.runtime) this.manifest.runtime = engine.runtime;
    void engine.exited.then((exit) => {
      if (this.#engine !== engine || exit.requested) return;
      // Died between instructions (killed from outside, out of memory): come back on next use.
      this.#notices.push(`The Python process ${exit.signal ? `was killed by ${exit.signal}` : `exited (code ${exit.code})`} while idle. ${this.#restoreNotice()}`);
      this.#dropEngine(engine);
    });
    this.#setState('warm');
    return engine;
  }

  /**
   * Saves the state if it changed, and keeps it as an automatic checkpoint unless `autoCheckpoint`
   * is false; pruning the old ones spares `spare`.
   */
  async #snapshot({ autoCheckpoint = true, spare }: { autoCheckpoint?: boolean; spare?: string } = {}): Promise<void> {
    const engine = this.#engine;
    if (!engine || !this.#dirty) return;
    const temp = this.store.tempSnapshotPath(this.name);
    let report;
    try {
      report = await engine.snapshot(temp);
    } catch (error) {
      await unlink(temp).catch(() => {});
      this.#swapError = (error as Error).message;
      throw error;
    }
    this.#swapError = null;
    await this.store.commitSnapshot(this.name, temp);
    this.manifest.snapshot = { at: new Date().toISOString(), seq: this.#completedSeq + 1, bytes: report.bytes };
    delete this.manifest.unsaved;
    await this.store.save(this.manifest);
    this.#dirty = false;
    this.onChange(this, { type: 'checkpoint', bytes: report.bytes });
    // Every saved change is also an automatic checkpoint; failing to keep one loses no state.
    if (!autoCheckpoint) return;
    try {
      await this.#checkpoints.add(await this.#source(), null, true);
      await this.#checkpoints.prune(this.settings.autoCheckpoints, spare);
    } catch (error) {
      this.onChange(this, { type: 'error', message: `automatic checkpoint failed: ${(error as Error).message}` });
    }
  }

  /** The machine's current saved state: its snapshot file, if any, and its own files. */
  async #source(): Promise<CheckpointSource> {
    const snapshotPath = (await this.store.hasSnapshot(this.name)) ? this.store.snapshotPath(this.name) : null;
    return { seq: this.manifest.snapshot?.seq ?? this.#completedSeq + 1, snapshotPath, filesDir: this.#ownFiles() };
  }

  /** The python engine's working folder, which its snapshots do not hold; a sandbox machine's files are in its snapshot. */
  #ownFiles(): string | null {
    return this.manifest.engine === 'python' ? this.store.filesDir(this.name) : null;
  }

  #scheduleCheckpoint(): void {
    this.#clearCheckpoint();
    if (!this.#dirty || !this.isIdle) return;
    this.#checkpointTimer = setTimeout(() => {
      this.checkpoint().catch((error: Error) => this.onChange(this, { type: 'error', message: `checkpoint failed: ${error.message}` }));
    }, this.settings.checkpointDelayMs);
    this.#checkpointTimer.unref();
  }

  #clearCheckpoint(): void {
    clearTimeout(this.#checkpointTimer);
    this.#checkpointTimer = undefined;
  }

  async #stopEngine(): Promise<void> {
    const engine = this.#engine;
    if (!engine) return;
    this.#engine = undefined;
    await engine.stop();
    this.#setState('swapped');
  }

  #dropEngine(engine: Engine): void {
    if (this.#engine !== engine) return;
    this.#engine = undefined;
    this.#dirty = false;
    if (!this.#current) this.#setState('swapped');
  }

  #withNotices(result: ExecResult): ExecResult {
    if (!this.#notices.length && !this.#lost.length) return result;
    const data: ResultData = { ...(result.data ?? {}) };
    if (this.#lost.length) data.lost = [...this.#lost, ...(data.lost ?? [])];
    if (this.#notices.length) data.notices = [...this.#notices];
    this.#notices = [];
    this.#lost = [];
    return { ...result, data } as ExecResult;
  }

  #finish(instruction: LiveInstruction, outcome: ExecResult): void {
    const unrecorded = this.#record(() => this.#history.finished(instruction.seq, outcome, streamText(instruction.chunks, 'stdout'), streamText(instruction.chunks, 'stderr')));
    const why = instruction.unrecorded ?? unrecorded;
    const result = why ? withNotice(outcome, why) : outcome;
    instruction.status = 'done';
    instruction.result = result;
    instruction.resolve(result);
    this.onChange(this, { type: 'instruction', seq: instruction.seq, result });
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

  #setState(state: MachineState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.onChange(this, { type: 'state', state });
  }

  async #historyEntry(seq: number): Promise<HistoryEntry | undefined> {
    const entry = (await this.#history.read()).find((e) => e.seq === seq);
    if (entry && !entry.result) {
      // Started but never finished: the server stopped while it ran.
      entry.result = { error: 'The server stopped while this instruction ran; its effects are lost.', runtime_ms: 0 };
    }
    return entry;
  }

  #assertAlive(): void {
    if (this.#deleted) throw new MachineGoneError(this.name);
  }
}

function withNotice(result: ExecResult, notice: string): ExecResult {
  return { ...result, data: { ...(result.data ?? {}), notices: [...(result.data?.notices ?? []), notice] } } as ExecResult;
}
