import type { Engine, EngineFactory } from '../engines/engine.ts';
import type {
  CheckpointInfo,
  ExecResult,
  HistoryEntry,
  MachineInfo,
  MachineState,
  OutputChunk,
  RollbackResult,
  SenderListeners,
  UpgradeResult,
} from '../shared/types.ts';
import { CheckpointStore, type CheckpointSource } from './checkpoint-store.ts';
import { InstructionQueue, type QueuedInstruction } from './instruction-queue.ts';
import { InstructionRun, type RunParts } from './instruction-run.ts';
import { MachineCheckpoints, NotSavedError } from './machine-checkpoints.ts';
import { MachineEngine, MachineGoneError } from './machine-engine.ts';
import { MachineNotices } from './machine-notices.ts';
import type { MachineManifest, MachineStore } from './machine-store.ts';
import type { MachineHome } from './machine-home.ts';
import { MachineMovedError } from './machine-errors.ts';
import { StateSaver } from './state-saver.ts';

export { CheckpointNotFoundError, NotSavedError, UpgradeRefusedError } from './machine-checkpoints.ts';
export { MachineGoneError } from './machine-engine.ts';
export type { QueuedInstruction } from './instruction-queue.ts';

/** What a machine's manifest tells of it, as `info` gives it: a machine not loaded here has nothing more. */
export function manifestInfo(m: MachineManifest, state: MachineState): MachineInfo {
  return {
    name: m.name,
    createdAt: m.createdAt,
    tags: { ...m.tags },
    engine: m.engine,
    memoryMb: m.memoryMb,
    state,
    nextSeq: m.nextSeq,
    pendingInstructions: 0,
    lastUsedAt: m.lastUsedAt,
    snapshot: m.snapshot,
    runtime: m.runtime ?? null,
    upgradeTo: null,
    warnings: m.rebuilt ? [m.rebuilt] : [],
    ...(m.workdir ? { workdir: m.workdir } : {}),
  };
}

/** How soon a commit that failed (the bucket or the directory down) is tried again. */
const COMMIT_RETRY_MS = 5000;

/** Tunables a machine takes from its manager. */
export interface MachineSettings {
  /** Bytes of output kept per instruction. */
  outputLimit: number;
  /** Time between an interrupt and the hard stop of code that ignores it. */
  interruptGraceMs: number;
  /** Quiet time after an instruction before the machine's state is saved to disk. */
  saveDelayMs: number;
  /** Longest a changed state goes unsaved while instructions keep coming. */
  saveWithinMs: number;
  /** How many automatic checkpoints (one per save of a changed state) a machine keeps. */
  autoCheckpoints: number;
  /** Whose a machine is, for its engine (`EngineOptions.tenant`). */
  tenantOf?: (machine: string) => Promise<string | undefined>;
}

export type MachineChange =
  | { type: 'state'; state: MachineState }
  | { type: 'instruction'; seq: number; result: ExecResult }
  | { type: 'saved'; bytes: number }
  | { type: 'error'; message: string }
  /** Its home says another node owns it now: this manager must let it go, unsaved. */
  | { type: 'moved'; message: string };

/**
 * One machine: its instructions run one at a time against its engine, with timeouts, interrupts
 * and crashes, its state saved and swapped, its checkpoints. Its parts, each a module of its own:
 * the queue (`instruction-queue.ts`), one instruction's run (`instruction-run.ts`), the engine's life (`machine-engine.ts`), durability
 * (`state-saver.ts`, `machine-notices.ts`) and checkpoints (`machine-checkpoints.ts`). Every
 * engine call goes through one serial queue, so instructions, introspection and saves never overlap.
 */
export class Machine {
  #state: MachineState = 'swapped';
  /** When and why this server last swapped the machine out. */
  #swappedOut?: { at: string; reason: string };
  #ops: Promise<unknown> = Promise.resolve();
  #deleted = false;
  /** The instruction being run, from its swap-in to its result. */
  #running?: InstructionRun;
  readonly #runParts: RunParts;
  readonly #queue: InstructionQueue;
  readonly #engine: MachineEngine;
  readonly #notices: MachineNotices;
  readonly #saver: StateSaver;
  readonly #checkpoints: MachineCheckpoints;
  /** Why the state saved here is not in the machine's home (a cluster's bucket) yet; tried again until it is. */
  #commitError: string | null = null;
  #commitRetry?: NodeJS.Timeout;

  constructor(
    readonly manifest: MachineManifest,
    private readonly store: MachineStore,
    createEngine: EngineFactory,
    private readonly settings: MachineSettings,
    private readonly onChange: (machine: Machine, change: MachineChange) => void,
    private readonly home: MachineHome,
  ) {
    const onFinished = (seq: number, result: ExecResult) => onChange(this, { type: 'instruction', seq, result });
    const onError = (message: string) => onChange(this, { type: 'error', message });
    const setState = (state: MachineState) => this.#setState(state);
    const checkpoints = new CheckpointStore(store.checkpointsDir(manifest.name));
    this.#queue = new InstructionQueue(manifest, store.history(manifest.name), onFinished);
    this.#notices = new MachineNotices(manifest, this.#queue);
    this.#engine = new MachineEngine({
      manifest,
      store,
      createEngine,
      outputLimit: settings.outputLimit,
      tenant: async () => settings.tenantOf?.(manifest.name),
      queue: this.#queue,
      notices: this.#notices,
      setState,
      isDeleted: () => this.#deleted,
    });
    this.#saver = new StateSaver({
      manifest,
      store,
      engine: this.#engine,
      queue: this.#queue,
      checkpoints,
      saveDelayMs: settings.saveDelayMs,
      saveWithinMs: settings.saveWithinMs,
      autoCheckpoints: settings.autoCheckpoints,
      writesBehind: home.ownsDataDir,
      saveInTurn: () => this.save(),
      onSaved: (bytes) => onChange(this, { type: 'saved', bytes }),
      onError,
    });
    this.#runParts = {
      queue: this.#queue,
      engine: this.#engine,
      notices: this.#notices,
      saver: this.#saver,
      interruptGraceMs: settings.interruptGraceMs,
      setState,
      isDeleted: () => this.#deleted,
    };
    this.#checkpoints = new MachineCheckpoints({ manifest, store, checkpoints, queue: this.#queue, engine: this.#engine, saver: this.#saver });
  }

  get name(): string {
    return this.manifest.name;
  }

  get state(): MachineState {
    return this.#state;
  }

  /** The engine's process while the machine is warm. */
  get pid(): number | undefined {
    return this.#engine.current?.pid;
  }

  get isWarm(): boolean {
    return this.#engine.current !== undefined;
  }

  /** Nothing running or queued. */
  get isIdle(): boolean {
    return this.#queue.isIdle;
  }

  info(): MachineInfo {
    const m = this.manifest;
    return {
      ...manifestInfo(m, this.#state),
      pendingInstructions: this.#queue.size,
      warnings: [
        ...(m.rebuilt ? [m.rebuilt] : []),
        ...(this.#saver.error ? [`It cannot be swapped out, so it stays in memory: ${this.#saver.error}`] : []),
        ...(this.#commitError ? [`Its state is saved on this node only, not in the cluster's bucket, and is sent again shortly: ${this.#commitError}`] : []),
      ],
      ...(this.#state === 'swapped' && this.#swappedOut ? { swappedOut: { ...this.#swappedOut } } : {}),
    };
  }

  // ---- instructions ---------------------------------------------------------------------------

  /** Queues an instruction and returns it at once; `done` settles with its result. */
  exec(code: string, timeoutSeconds: number, sender: SenderListeners = {}): QueuedInstruction {
    this.#assertAlive();
    const instruction = this.#queue.add(code, timeoutSeconds, sender);
    this.#saver.cancel();
    void this.#serial(async () => {
      this.#running = new InstructionRun(instruction, this.#runParts);
      try {
        await this.#running.perform();
      } finally {
        this.#running = undefined;
      }
    });
    return instruction;
  }

  /** An instruction of this machine by seq, with output and result while it is recent. */
  instruction(seq: number): QueuedInstruction | undefined {
    return this.#queue.get(seq);
  }

  /**
   * Streams an instruction's output from its first chunk, then resolves with its result (see
   * `InstructionQueue.follow`).
   */
  follow(seq: number, onChunk: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult | undefined> {
    return this.#queue.follow(seq, onChunk, signal);
  }

  /** The result of an instruction, waiting for it when it has not finished. */
  result(seq: number): Promise<ExecResult | undefined> {
    return this.#queue.result(seq);
  }

  history(last?: number): Promise<HistoryEntry[]> {
    return this.#queue.history(last);
  }

  /** Cancels queued instructions and interrupts the running one (escalating to a hard stop). */
  interrupt(): { cancelled: number; interrupted: boolean } {
    const cancelled = this.#queue.cancelPending('it was cancelled by an interrupt before it started');
    // Running from its swap-in until its result is given (`#running` is let go a moment later).
    const running = this.#queue.current ? this.#running : undefined;
    if (running && !running.stopping) running.stop('interrupt');
    return { cancelled, interrupted: running !== undefined };
  }

  /**
   * Runs `task` against a warm engine, in turn with instructions. A task that `changesState`
   * (writing a file, installing a package) makes the machine due for a save.
   */
  withEngine<T>(task: (engine: Engine) => Promise<T>, changesState = false): Promise<T> {
    this.#assertAlive();
    return this.#serial(async () => {
      const result = await task(await this.#engine.warm());
      if (changesState) {
        this.#engine.dirty = true;
        this.#saver.schedule();
      }
      return result;
    });
  }

  // ---- durability -----------------------------------------------------------------------------

  /**
   * Called when the data dir's previous owner (or the node that ran the machine, `stopped` says)
   * stopped without saving: the first result then says which instructions' effects did not
   * survive, and the instructions it stopped in the middle of end with what the machine went
   * back to; so do those `given` out that the history never saw start.
   */
  async noteUncleanStop(stopped?: string, given?: { from: number; to: number }): Promise<void> {
    if (this.#notices.uncleanStop(stopped)) await this.#queue.endUnfinished(this.#notices.restoreNotice(), given);
  }

  /** Called when the server stops and this machine's state could not be saved: the next start says why. */
  noteUnsavedAtStop(reason: string): Promise<void> {
    return this.#saver.noteUnsaved(reason);
  }

  /** Called when the manifest was just rebuilt: the first result says so, and what was reset. */
  noteRebuilt(): void {
    if (this.manifest.rebuilt) this.#notices.add(this.manifest.rebuilt);
  }

  /**
   * Writes the state to disk if anything changed since it was last saved; resolves once it is
   * there. The machine's instructions go on once its state is taken (`StateSaver.begin`).
   */
  async save(): Promise<void> {
    this.#saver.cancel();
    await (
      await this.#serial(() => this.#saver.begin(), true)
    ).written;
  }

  /** Saves the state and stops the engine, for `reason` (which `info` gives while it is out). The next use swaps it back in. */
  swapOut(reason = 'asked to (perennial machine swap, or the API)'): Promise<void> {
    this.#saver.cancel();
    return this.#serial(async () => {
      if (!this.#engine.current) return;
      await this.#saver.save();
      // Known before the engine stops, whose stop is what says the machine is swapped.
      this.#swappedOut = { at: new Date().toISOString(), reason };
      await this.#engine.stop();
    }, true);
  }

  /**
   * Gives the machine `tags` and, when `workdir` is given, that host folder to work in (null: its
   * own), in turn with instructions. A warm machine that moves is saved and swapped out first: it
   * comes back in the new folder, its working directory and the paths it kept under the old one
   * moved there.
   */
  update(change: { tags: Record<string, string>; workdir?: string | null }): Promise<void> {
    this.#assertAlive();
    return this.#serial(async () => {
      const workdir = change.workdir === undefined ? this.manifest.workdir : (change.workdir ?? undefined);
      if (workdir !== this.manifest.workdir && this.#engine.current) {
        this.#saver.cancel();
        try {
          await this.#saver.save();
        } catch (error) {
          throw new NotSavedError(`move machine ${this.name}`, (error as Error).message);
        }
        this.#swappedOut = { at: new Date().toISOString(), reason: `it moved to ${workdir ?? 'a folder of its own'}` };
        await this.#engine.stop();
      }
      // In place: the machine's parts hold this manifest.
      this.manifest.tags = change.tags;
      if (workdir) this.manifest.workdir = workdir;
      else delete this.manifest.workdir;
      await this.store.save(this.manifest);
    }, true);
  }

  /**
   * Saves the state if it changed, then gives `task` what it is made of, in turn with instructions.
   * `what` names the operation in a `NotSavedError` when either fails; `autoCheckpoint` false: the
   * task keeps that state itself, so the save makes no automatic checkpoint of it.
   */
  withSavedState<T>(what: string, task: (source: CheckpointSource) => Promise<T>, autoCheckpoint = true): Promise<T> {
    this.#assertAlive();
    this.#saver.cancel();
    return this.#serial(async () => {
      try {
        await this.#saver.save({ autoCheckpoint });
        return await task(await this.#saver.source());
      } catch (error) {
        throw new NotSavedError(what, (error as Error).message);
      }
    }, true);
  }

  // ---- checkpoints ----------------------------------------------------------------------------

  /**
   * Takes a named (or unnamed) checkpoint of the current state, and resolves once it is on disk;
   * the machine's instructions go on once its state is taken (`StateSaver.begin`).
   */
  async takeCheckpoint(label: string | null): Promise<CheckpointInfo> {
    this.#assertAlive();
    this.#saver.cancel();
    const notSaved = (error: Error): never => {
      throw new NotSavedError(`take a checkpoint of machine ${this.name}`, error.message);
    };
    const taking = this.#serial(() => this.#saver.begin({ autoCheckpoint: false, then: (source) => this.#checkpoints.take(source, label) }), true);
    const { written } = await taking.catch(notSaved);
    // `then` was given: the checkpoint it kept.
    return (await written.catch(notSaved))!;
  }

  checkpoints(): Promise<CheckpointInfo[]> {
    this.#assertAlive();
    return this.#checkpoints.list();
  }

  deleteCheckpoint(idOrLabel: string): Promise<void> {
    this.#assertAlive();
    return this.#serial(() => this.#checkpoints.delete(idOrLabel), true);
  }

  /**
   * Returns the machine to a checkpoint (see `MachineCheckpoints.rollback`): what runs is
   * interrupted, and the rollback goes in turn, before anything queued after it.
   */
  async rollback(idOrLabel: string): Promise<RollbackResult> {
    this.#assertAlive();
    const plan = await this.#checkpoints.planRollback(idOrLabel);
    this.interrupt();
    return this.#serial(async () => {
      try {
        return await this.#checkpoints.rollback(plan);
      } finally {
        // The old engine was let go; one that could not come back leaves the machine swapped.
        if (!this.#engine.current) this.#setState('swapped');
      }
    }, true);
  }

  /** Moves the machine onto the newest runtime this Perennial ships (see `MachineCheckpoints.upgrade`), in turn with instructions. */
  upgrade(): Promise<UpgradeResult> {
    this.#assertAlive();
    this.#saver.cancel();
    return this.#serial(() => this.#checkpoints.upgrade(), true);
  }

  // ---- end of life ----------------------------------------------------------------------------

  /** Stops everything and removes the machine's files. */
  async delete(): Promise<void> {
    this.#deleted = true;
    this.#saver.stop();
    clearTimeout(this.#commitRetry);
    this.#queue.cancelPending('the machine was deleted');
    await this.#engine.release()?.stop();
    await this.#ops.catch(() => {});
    await this.#saver.settled();
    this.#queue.close();
    await this.store.remove(this.name);
  }

  /** Stops the engine without saving, for a server that is going away after `save()`. */
  async close(): Promise<void> {
    this.#saver.stop();
    clearTimeout(this.#commitRetry);
    // A save being written behind needs the engine until its file is whole.
    await this.#saver.settled();
    await this.#engine.stop({ last: true });
    this.#queue.close();
  }

  // ---- internals ------------------------------------------------------------------------------

  /** Runs `task` in the machine's turn; one that `commits` changed its saved state, which then goes to its home. */
  #serial<T>(task: () => Promise<T>, commits = false): Promise<T> {
    const next = this.#ops.then(async () => {
      try {
        return await task();
      } finally {
        if (commits) await this.#commit();
      }
    });
    this.#ops = next.catch(() => {});
    return next;
  }

  /**
   * Sends the saved state to the machine's home. A failure loses nothing here (the data dir holds
   * it) and is tried again; one that says another node owns the machine now lets it go.
   */
  async #commit(): Promise<void> {
    clearTimeout(this.#commitRetry);
    if (this.#deleted) return;
    try {
      await this.home.commit(this.manifest, this.store.dir(this.name));
      this.#commitError = null;
    } catch (error) {
      if (error instanceof MachineMovedError) {
        this.onChange(this, { type: 'moved', message: error.message });
        throw error;
      }
      this.#commitError = (error as Error).message;
      this.onChange(this, { type: 'error', message: `its state is not in the cluster's bucket yet: ${this.#commitError}` });
      this.#commitRetry = setTimeout(() => void this.#serial(async () => {}, true).catch(() => {}), COMMIT_RETRY_MS);
      this.#commitRetry.unref();
    }
  }

  #setState(state: MachineState): void {
    if (this.#state === state) return;
    this.#state = state;
    // A reason stands for one swap: a machine out again for another (its process died) has none.
    if (state !== 'swapped') this.#swappedOut = undefined;
    this.onChange(this, { type: 'state', state });
  }

  #assertAlive(): void {
    if (this.#deleted) throw new MachineGoneError(this.name, { deleted: true });
  }
}
