import { unlink } from 'node:fs/promises';
import { PhaseClock } from '../platform/phase-timings.ts';
import type { CheckpointSource, CheckpointStore } from './checkpoint-store.ts';
import type { InstructionQueue } from './instruction-queue.ts';
import type { MachineEngine } from './machine-engine.ts';
import type { MachineManifest, MachineStore } from './machine-store.ts';

interface SaverContext {
  manifest: MachineManifest;
  store: MachineStore;
  engine: MachineEngine;
  queue: InstructionQueue;
  checkpoints: CheckpointStore;
  /** Quiet time after an instruction before the state is saved. */
  saveDelayMs: number;
  /** Longest a changed state goes unsaved while instructions keep coming: then it is saved between two of them. */
  saveWithinMs: number;
  /** How many automatic checkpoints (one per save of a changed state) to keep. */
  autoCheckpoints: number;
  /** Saves in turn with the machine's instructions: what the timer calls. */
  saveInTurn(): Promise<void>;
  onSaved(bytes: number): void;
  onError(message: string): void;
}

/**
 * A machine's durability: its state saved to its snapshot file when it changed (once the machine
 * is quiet for a while, within `saveWithinMs` of the change however busy it stays, or when
 * asked), each save kept as an automatic checkpoint, and the manifest that says what the
 * snapshot holds. A crash, or a cluster node's death, loses at most what came after the last save.
 */
export class StateSaver {
  /** Why the last save failed; the machine then stays warm rather than lose its state. */
  error: string | null = null;
  #timer?: NodeJS.Timeout;
  /** Set from the first unsaved change: the save it forces if the machine is never quiet. */
  #deadline?: NodeJS.Timeout;

  constructor(private readonly context: SaverContext) {}

  /**
   * Saves the state if it changed, and keeps it as an automatic checkpoint unless `autoCheckpoint`
   * is false; pruning the old ones spares `spare`.
   */
  async save({ autoCheckpoint = true, spare }: { autoCheckpoint?: boolean; spare?: string } = {}): Promise<void> {
    const { manifest, store, engine: slot } = this.context;
    const engine = slot.current;
    if (!engine || !slot.dirty) return this.#clearDeadline();
    const temp = store.tempSnapshotPath(manifest.name);
    let report;
    try {
      report = await engine.snapshot(temp);
    } catch (error) {
      await unlink(temp).catch(() => {});
      this.error = (error as Error).message;
      throw error;
    }
    this.error = null;
    const clock = new PhaseClock();
    await store.commitSnapshot(manifest.name, temp);
    clock.lap('save: snapshot renamed in place');
    manifest.snapshot = { at: new Date().toISOString(), seq: this.context.queue.completedSeq + 1, bytes: report.bytes };
    delete manifest.unsaved;
    await store.save(manifest);
    clock.lap('save: manifest written');
    slot.dirty = false;
    this.#clearDeadline();
    this.context.onSaved(report.bytes);
    // Every saved change is also an automatic checkpoint; failing to keep one loses no state.
    if (!autoCheckpoint) return;
    try {
      await this.context.checkpoints.add(await this.source(), null, true);
      await this.context.checkpoints.prune(this.context.autoCheckpoints, spare);
    } catch (error) {
      this.context.onError(`automatic checkpoint failed: ${(error as Error).message}`);
    }
  }

  /** The machine's current saved state: its snapshot file, if any, and its own files. */
  async source(): Promise<CheckpointSource> {
    const { manifest, store } = this.context;
    const snapshotPath = (await store.hasSnapshot(manifest.name)) ? store.snapshotPath(manifest.name) : null;
    return { seq: manifest.snapshot?.seq ?? this.context.queue.completedSeq + 1, snapshotPath, filesDir: this.ownFiles() };
  }

  /** The python engine's working folder, which its snapshots do not hold; a sandbox machine's files are in its snapshot. */
  ownFiles(): string | null {
    const { manifest, store } = this.context;
    return manifest.engine === 'python' ? store.filesDir(manifest.name) : null;
  }

  /** Saves a changed state once the machine has been quiet for a while, and at the latest `saveWithinMs` after the change. */
  schedule(): void {
    this.cancel();
    if (!this.context.engine.dirty) return;
    if (!this.#deadline) {
      // In turn: between two instructions of a machine that is never quiet.
      this.#deadline = setTimeout(() => {
        this.#deadline = undefined;
        this.#saveInTurn();
      }, this.context.saveWithinMs);
      this.#deadline.unref();
    }
    if (!this.context.queue.isIdle) return;
    this.#timer = setTimeout(() => this.#saveInTurn(), this.context.saveDelayMs);
    this.#timer.unref();
  }

  /** Drops the quiet-time save (an instruction came, or the state is being saved another way); the deadline holds. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** No save is due any more: the machine closes or goes away. */
  stop(): void {
    this.cancel();
    this.#clearDeadline();
  }

  #saveInTurn(): void {
    this.context.saveInTurn().catch((error: Error) => this.context.onError(`saving the state failed: ${error.message}`));
  }

  #clearDeadline(): void {
    clearTimeout(this.#deadline);
    this.#deadline = undefined;
  }

  /** When the server stops and the state could not be saved: the next start says why. */
  async noteUnsaved(reason: string): Promise<void> {
    const { manifest, store } = this.context;
    manifest.unsaved = { at: new Date().toISOString(), reason };
    await store.save(manifest).catch(() => {});
  }
}
