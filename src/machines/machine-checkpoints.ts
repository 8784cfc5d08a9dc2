import { stat } from 'node:fs/promises';
import { AlreadyCurrentError, EngineExitedError, type Engine } from '../engines/engine.ts';
import type { CheckpointInfo, RollbackResult, UpgradeResult } from '../shared/types.ts';
import { describeRuntime } from '../shared/result-format.ts';
import type { CheckpointSource, CheckpointStore } from './checkpoint-store.ts';
import { withNotice, type InstructionQueue } from './instruction-queue.ts';
import type { EngineAhead, MachineEngine } from './machine-engine.ts';
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

/** The machine's parts that its checkpoint operations work with. */
export interface CheckpointParts {
  manifest: MachineManifest;
  store: MachineStore;
  checkpoints: CheckpointStore;
  queue: InstructionQueue;
  engine: MachineEngine;
  saver: StateSaver;
}

/** A rollback under way: the checkpoint it goes to, and the engine started ahead to load it. */
export interface RollbackPlan {
  target: CheckpointInfo;
  asked: string;
  ahead: Promise<EngineAhead>;
}

/**
 * A machine's checkpoints and the operations on them: take, list, delete, roll back, and the
 * upgrade, which keeps the state it leaves as a checkpoint. The machine runs each in turn with
 * its instructions (`Machine`): these are the steps, given the parts they change.
 */
export class MachineCheckpoints {
  constructor(private readonly parts: CheckpointParts) {}

  get #name(): string {
    return this.parts.manifest.name;
  }

  /** Keeps `source`, the state just saved, as a named (or unnamed) checkpoint. */
  take(source: CheckpointSource, label: string | null): Promise<CheckpointInfo> {
    return this.parts.checkpoints.add(source, label, false);
  }

  list(): Promise<CheckpointInfo[]> {
    return this.parts.checkpoints.list();
  }

  async delete(idOrLabel: string): Promise<void> {
    const found = await this.parts.checkpoints.find(idOrLabel);
    if (!found) throw new CheckpointNotFoundError(this.#name, idOrLabel);
    await this.parts.checkpoints.remove(found.id);
  }

  /**
   * Finds the checkpoint to roll back to and, so that a rollback costs no more than a swap-in,
   * starts the next engine now, while what runs stops and the state being left is saved. When
   * the machine's files are in its snapshot (sandbox), that engine loads the checkpoint too.
   */
  async planRollback(idOrLabel: string): Promise<RollbackPlan> {
    const { checkpoints, saver, engine: slot } = this.parts;
    const target = await checkpoints.find(idOrLabel);
    if (!target) throw new CheckpointNotFoundError(this.#name, idOrLabel);
    saver.cancel();
    const ahead = slot.ahead(saver.ownFiles() === null ? await checkpoints.snapshotOf(target.id) : null);
    ahead.catch(() => {});
    return { target, asked: idOrLabel, ahead };
  }

  /**
   * Returns the machine to the planned checkpoint: its state and (python engine) its files. The
   * state being left is saved as an automatic checkpoint, so the rollback can itself be undone;
   * the history records it as an instruction of its own.
   */
  async rollback({ target, asked, ahead }: RollbackPlan): Promise<RollbackResult> {
    const { checkpoints, saver, engine: slot, manifest, store, queue } = this.parts;
    let checkpoint: CheckpointInfo | undefined;
    const notes: string[] = [];
    let old: Engine | undefined;
    try {
      // By id: the checkpoint the label named when asked, which the engine ahead loads.
      checkpoint = await checkpoints.find(target.id);
      if (!checkpoint) throw new CheckpointNotFoundError(this.#name, asked);
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
      if (manifest.workdir)
        notes.push(`The files of ${manifest.workdir}, where it works, are yours and stay as they are now: a rollback returns the machine's own state.`);
    } catch (error) {
      void ahead.then(({ engine }) => engine.stop()).catch(() => {});
      slot.current ??= old;
      throw error;
    }
    const at = new Date();
    const named = `checkpoint ${checkpoint.id}${checkpoint.label ? ` ("${checkpoint.label}")` : ''}`;
    const notice = [`Rolled back to ${named}, taken before instruction ${checkpoint.seq} at ${checkpoint.at}.`, ...notes].join(' ');
    // The rollback has happened: what cannot be recorded now is said, not thrown.
    const recorded = queue.recordOperation(`# perennial: rollback to ${named}`, { value: null, data: { notices: [notice] }, runtime_ms: 0 }, at);
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
    queue.announce(seq, result);
    return { checkpoint, seq, notes };
  }

  /**
   * Moves the machine onto the newest runtime this Perennial ships (a sandbox machine made on an
   * older Pyodide). A named checkpoint keeps the state it leaves, on the runtime it leaves, to
   * roll back to; the history records the upgrade and what it could not carry.
   */
  async upgrade(): Promise<UpgradeResult> {
    const { checkpoints, saver, engine: slot, manifest, queue } = this.parts;
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
    const recorded = queue.recordOperation(`# perennial: upgrade to ${describeRuntime(report.to)}`, {
      value: null,
      data: { notices: [notice], ...(report.lost.length ? { lost: report.lost } : {}) },
      runtime_ms: 0,
    });
    let result = recorded.result;
    // The upgraded state is saved now: the next swap-in must not go back to the old runtime. One
    // that cannot be saved stays in memory (the saver keeps it warm) and the result says so.
    await saver
      .save()
      .catch(
        (error: Error) => (result = withNotice(result, `The upgraded state is not saved yet (${error.message}); the machine stays in memory until it is.`)),
      );
    queue.announce(recorded.seq, result);
    return { from: report.from, to: report.to, lost: report.lost, checkpoint, seq: recorded.seq };
  }
}
