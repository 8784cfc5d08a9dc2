import { stat } from 'node:fs/promises';
import { AlreadyCurrentError, EngineExitedError, type Engine } from '../engines/engine.ts';
import type { CheckpointInfo, ExecResult, MachineState, RollbackResult, UpgradeResult } from '../shared/types.ts';
import { describeRuntime } from '../shared/result-format.ts';
import type { CheckpointSource, CheckpointStore } from './checkpoint-store.ts';
import { withNotice, type InstructionQueue } from './instruction-queue.ts';
import type { MachineEngine } from './machine-engine.ts';
import type { MachineManifest, MachineStore } from './machine-store.ts';
import type { StateSaver } from './state-saver.ts';
import { CodedError } from '../platform/coded-error.ts';

/** No checkpoint of the machine has that id or label. */
export class CheckpointNotFoundError extends CodedError {
  static override readonly errorCode = 'CheckpointNotFound';
  constructor(machine: string, checkpoint: string) {
    super(`Machine ${machine} has no checkpoint "${checkpoint}" (list them to see their ids and labels)`);
  }
}

/**
 * The machine's state could not be saved for an operation (a full disk, most often); nothing was
 * changed: the machine runs on, and its saved state and checkpoints are whole.
 */
export class NotSavedError extends CodedError {
  static override readonly errorCode = 'NotSaved';
  constructor(what: string, reason: string) {
    super(`Could not ${what}: ${reason}. Nothing was changed: the machine runs on as it was, and its saved state and checkpoints are whole.`);
  }
}

/** The machine cannot be upgraded (it is on the newest runtime, or its engine has none to move to); nothing was changed. */
export class UpgradeRefusedError extends CodedError {
  static override readonly errorCode = 'UpgradeRefused';
  constructor(machine: string, why: string) {
    super(`Machine ${machine} cannot be upgraded: ${why}.`);
  }
}

/** What the checkpoint operations work with: the machine's parts, and its queue of work. */
export interface CheckpointParts {
  manifest: MachineManifest;
  store: MachineStore;
  checkpoints: CheckpointStore;
  queue: InstructionQueue;
  engine: MachineEngine;
  saver: StateSaver;
  /** Runs `task` in turn with the machine's instructions. */
  serial<T>(task: () => Promise<T>): Promise<T>;
  /** Saves the state if it changed, then gives `task` what it is made of, in turn (see `Machine.withSavedState`). */
  withSavedState<T>(what: string, task: (source: CheckpointSource) => Promise<T>, autoCheckpoint: boolean): Promise<T>;
  interrupt(): void;
  setState(state: MachineState): void;
  onFinished(seq: number, result: ExecResult): void;
  onError(message: string): void;
}

/**
 * A machine's checkpoints and the operations on them: take, list, delete, roll back, and the
 * upgrade, which keeps the state it leaves as a checkpoint. Each runs in turn with instructions.
 */
export class MachineCheckpoints {
  constructor(private readonly parts: CheckpointParts) {}

  get #name(): string {
    return this.parts.manifest.name;
  }

  /** Takes a named (or unnamed) checkpoint of the current state. */
  take(label: string | null): Promise<CheckpointInfo> {
    return this.parts.withSavedState(`take a checkpoint of machine ${this.#name}`, (source) => this.parts.checkpoints.add(source, label, false), false);
  }

  list(): Promise<CheckpointInfo[]> {
    return this.parts.checkpoints.list();
  }

  async delete(idOrLabel: string): Promise<void> {
    await this.parts.serial(async () => {
      const found = await this.parts.checkpoints.find(idOrLabel);
      if (!found) throw new CheckpointNotFoundError(this.#name, idOrLabel);
      await this.parts.checkpoints.remove(found.id);
    });
  }

  /**
   * Returns the machine to a checkpoint: its state and (python engine) its files. What runs is
   * interrupted first; the state being left is saved as an automatic checkpoint, so the rollback
   * can itself be undone; the history records it as an instruction of its own.
   */
  async rollback(idOrLabel: string): Promise<RollbackResult> {
    const { checkpoints, saver, engine: slot, manifest, store } = this.parts;
    const target = await checkpoints.find(idOrLabel);
    if (!target) throw new CheckpointNotFoundError(this.#name, idOrLabel);
    this.parts.interrupt();
    saver.cancel();
    // So that a rollback costs no more than a swap-in, the next engine starts now, while what runs
    // stops, the state being left is saved and the checkpoint is put in place. When the machine's
    // files are in its snapshot (sandbox), it loads the checkpoint's state meanwhile too.
    const ahead = slot.ahead(saver.ownFiles() === null ? await checkpoints.snapshotOf(target.id) : null);
    ahead.catch(() => {});
    return this.parts.serial(async () => {
      let checkpoint: CheckpointInfo | undefined;
      const notes: string[] = [];
      let old: Engine | undefined;
      try {
        // By id: the checkpoint the label named when asked, which the engine ahead loads.
        checkpoint = await checkpoints.find(target.id);
        if (!checkpoint) throw new CheckpointNotFoundError(this.#name, idOrLabel);
        try {
          // The automatic checkpoint of the state being left must not prune the one rolled back to.
          await saver.save({ spare: checkpoint.id });
        } catch (error) {
          // Only a state already gone (its process died) may be left unsaved: a rollback can be undone.
          if (!(error instanceof EngineExitedError))
            throw new NotSavedError(`roll machine ${this.#name} back: the state it would leave could not be saved first`, (error as Error).message);
          notes.push(`The state it left could not be saved first (${error.message}).`);
        }
        // A python engine's old process stops before its files are replaced. A sandbox one, whose
        // state is all in its snapshot, stops once the next is up: its exit would slow that load.
        if (saver.ownFiles() === null) old = slot.release();
        else await slot.stop();
        const lost = await checkpoints.restore(checkpoint.id, store.snapshotPath(this.#name), saver.ownFiles()).catch((error: Error) => {
          throw new NotSavedError(`roll machine ${this.#name} back`, error.message);
        });
        notes.push(...lost);
      } catch (error) {
        void ahead.then(({ engine }) => engine.stop()).catch(() => {});
        slot.current ??= old;
        throw error;
      }
      const at = new Date();
      const named = `checkpoint ${checkpoint.id}${checkpoint.label ? ` ("${checkpoint.label}")` : ''}`;
      const notice = [`Rolled back to ${named}, taken before instruction ${checkpoint.seq} at ${checkpoint.at}.`, ...notes].join(' ');
      // The rollback has happened: what cannot be recorded now is said, not thrown.
      const recorded = this.parts.queue.recordOperation(`# perennial: rollback to ${named}`, { value: null, data: { notices: [notice] }, runtime_ms: 0 }, at);
      const seq = recorded.seq;
      let result = recorded.result;
      const size = (await stat(store.snapshotPath(this.#name)).catch(() => null))?.size;
      manifest.snapshot = size === undefined ? null : { at: at.toISOString(), seq: seq + 1, bytes: size };
      slot.dirty = false;
      // Failing to come back is the next instruction's to report, as after a swap.
      const warming = slot.warm(ahead).catch(() => {});
      await store.save(manifest).catch((error: Error) => (result = withNotice(result, `The machine's record could not be updated (${error.message}).`)));
      await warming;
      void old?.stop();
      if (!slot.current) this.parts.setState('swapped');
      this.parts.onFinished(seq, result);
      return { checkpoint, seq, notes };
    });
  }

  /**
   * Moves the machine onto the newest runtime this Perennial ships (a sandbox machine made on an
   * older Pyodide), in turn with instructions. A named checkpoint keeps the state it leaves, on the
   * runtime it leaves, to roll back to; the history records the upgrade and what it could not carry.
   */
  upgrade(): Promise<UpgradeResult> {
    const { checkpoints, saver, engine: slot, manifest } = this.parts;
    saver.cancel();
    return this.parts.serial(async () => {
      const engine = await slot.warm();
      if (!engine.upgrade)
        throw new UpgradeRefusedError(
          this.#name,
          `its ${engine.name} engine runs the interpreter it was given (${describeRuntime(engine.runtime)}); there is nothing to upgrade`,
        );
      const leaving = describeRuntime(engine.runtime);
      try {
        await saver.save({ autoCheckpoint: false });
      } catch (error) {
        throw new NotSavedError(`upgrade machine ${this.#name}: the state it would leave could not be saved first`, (error as Error).message);
      }
      const checkpoint = await checkpoints
        .add(await saver.source(), `before-upgrade-from-${engine.runtime?.pyodide ?? engine.runtime?.python ?? 'unknown'}`, false)
        .catch((error: Error) => {
          throw new NotSavedError(`upgrade machine ${this.#name}: no checkpoint of the state it would leave could be taken`, error.message);
        });
      let report;
      try {
        report = await engine.upgrade();
      } catch (error) {
        await checkpoints.remove(checkpoint.id).catch(() => {});
        if (error instanceof AlreadyCurrentError) throw new UpgradeRefusedError(this.#name, error.message);
        throw new Error(`Could not upgrade machine ${this.#name} from ${leaving}: ${(error as Error).message}. Nothing was changed: it runs on as it was.`, {
          cause: error,
        });
      }
      slot.dirty = true;
      manifest.runtime = report.to;
      const notice = `Upgraded from ${describeRuntime(report.from)} to ${describeRuntime(report.to)}; checkpoint ${checkpoint.id} ("${checkpoint.label}") holds the state before, on ${describeRuntime(report.from)}.`;
      const { seq, result } = this.parts.queue.recordOperation(`# perennial: upgrade to ${describeRuntime(report.to)}`, {
        value: null,
        data: { notices: [notice], ...(report.lost.length ? { lost: report.lost } : {}) },
        runtime_ms: 0,
      });
      // The upgraded state is saved now: the next swap-in must not go back to the old runtime.
      await saver.save().catch((error: Error) => this.parts.onError(`the upgraded state could not be saved yet: ${error.message}`));
      this.parts.onFinished(seq, result);
      return { from: report.from, to: report.to, lost: report.lost, checkpoint, seq };
    });
  }
}
