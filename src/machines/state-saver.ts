import { engineDescriptor } from '../engines/descriptors.ts';
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
  /** Whether a save may be written after the machine's turn: the data dir is the machine's home (no cluster's commit waits for it). */
  writesBehind: boolean;
  /** Saves in turn with the machine's instructions: what the timer calls. */
  saveInTurn(): Promise<void>;
  onSaved(bytes: number): void;
  onError(message: string): void;
}

export interface SaveOptions<T> {
  /** Whether the save is kept as an automatic checkpoint (default true). */
  autoCheckpoint?: boolean;
  /** An automatic checkpoint that pruning spares. */
  spare?: string;
  /** Given the saved state once it is on disk, before any later save: what keeps it (a named checkpoint). */
  then?: (source: CheckpointSource) => Promise<T>;
}

/**
 * A machine's durability: its state saved to its snapshot file when it changed (once the machine
 * is quiet for a while, within `saveWithinMs` of the change however busy it stays, or when
 * asked), each save kept as an automatic checkpoint, and the manifest that says what the
 * snapshot holds. A crash, or a cluster node's death, loses at most what came after the last
 * save on disk.
 *
 * A save pauses the machine only while the engine takes its state; where the machine's files are
 * in its snapshot and the data dir is its home, the file is written behind, while the machine runs
 * on, and the next save waits for it. A crash in between loses what the previous save did not
 * hold, as any crash does: the snapshot file, manifest and checkpoints are each replaced whole.
 */
export class StateSaver {
  /** Why the last save failed; the machine then stays warm rather than lose its state. */
  error: string | null = null;
  #timer?: NodeJS.Timeout;
  /** Set from the first unsaved change: the save it forces if the machine is never quiet. */
  #deadline?: NodeJS.Timeout;
  /** The last save's writing, until it is on disk and kept: never rejects. */
  #writing: Promise<unknown> = Promise.resolve();

  constructor(private readonly context: SaverContext) {}

  /** Saves the state if it changed (see `begin`), and resolves once it is on disk. */
  async save(options: SaveOptions<unknown> = {}): Promise<void> {
    await (
      await this.begin(options)
    ).written;
  }

  /**
   * Takes the state if it changed, in the machine's turn, and answers once the machine may run
   * on, with `written`: settled once the state is on disk, kept as an automatic checkpoint unless
   * `autoCheckpoint` is false (pruning the old ones spares `spare`), and given to `then`. Written
   * in the turn, when not behind (see the class): `written` has settled by the answer.
   */
  async begin<T>({ autoCheckpoint = true, spare, then }: SaveOptions<T> = {}): Promise<{ written: Promise<T | undefined> }> {
    await this.#writing;
    const { manifest, store, engine: slot } = this.context;
    const engine = slot.current;
    let written: Promise<void>;
    if (!engine || !slot.dirty) {
      this.#clearDeadline();
      written = Promise.resolve();
    } else {
      const temp = store.tempSnapshotPath(manifest.name);
      let report;
      try {
        report = await engine.snapshot(temp);
      } catch (error) {
        await unlink(temp).catch(() => {});
        this.error = (error as Error).message;
        throw error;
      }
      // What the snapshot holds: the instructions finished by its pause.
      const taken = { at: new Date().toISOString(), seq: this.context.queue.completedSeq + 1 };
      slot.dirty = false;
      this.#clearDeadline();
      written = this.#keep(report.written, temp, taken, autoCheckpoint, spare);
    }
    const kept = then ? written.then(async () => then(await this.source())) : written.then(() => undefined);
    this.#writing = kept.catch(() => {});
    if (!this.#behind) await kept;
    return { written: kept };
  }

  /** Resolves once the last save's writing is over, however it ended. */
  settled(): Promise<unknown> {
    return this.#writing;
  }

  get #behind(): boolean {
    return this.context.writesBehind && this.ownFiles() === null;
  }

  /** Puts the snapshot being written at `temp` in place once whole, with the manifest that says what it holds. */
  async #keep(written: Promise<{ bytes: number }>, temp: string, taken: { at: string; seq: number }, autoCheckpoint: boolean, spare?: string): Promise<void> {
    const { manifest, store, engine: slot } = this.context;
    let bytes: number;
    try {
      ({ bytes } = await written);
    } catch (error) {
      await unlink(temp).catch(() => {});
      this.error = (error as Error).message;
      // The state taken is not saved: the machine has changed since its last save on disk.
      slot.dirty = true;
      throw error;
    }
    this.error = null;
    const clock = new PhaseClock();
    await store.commitSnapshot(manifest.name, temp);
    clock.lap('save: snapshot renamed in place');
    manifest.snapshot = { ...taken, bytes };
    delete manifest.unsaved;
    await store.save(manifest);
    clock.lap('save: manifest written');
    this.context.onSaved(bytes);
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

  /** The machine's own files where its engine keeps them beside its snapshot, which does not hold them; else none. */
  ownFiles(): string | null {
    const { manifest, store } = this.context;
    return engineDescriptor(manifest.engine).filesBesideSnapshot ? store.filesDir(manifest.name) : null;
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
