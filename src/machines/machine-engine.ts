import { existsSync } from 'node:fs';
import type { Engine, EngineFactory } from '../engines/engine.ts';
import type { MachineState } from '../shared/types.ts';
import type { InstructionQueue } from './instruction-queue.ts';
import type { MachineNotices } from './machine-notices.ts';
import type { MachineManifest, MachineStore } from './machine-store.ts';
import { CodedError, errorCodeOf } from '../platform/coded-error.ts';

/** An engine started before the machine needs it (a rollback's); `restored` once it holds the state it was given. */
export interface EngineAhead {
  engine: Engine;
  restored: boolean;
  /** What the restore has for the next result. */
  notices: string[];
}

/** No machine has the name: it was deleted (while something waited for it, or before), or never was. */
export class MachineGoneError extends CodedError {
  static override readonly errorCode = 'MachineNotFound';
  /** `nearest`: the machine's name that the one asked for was likely meant to be; `deleted`: the name is known to be a deleted machine's. */
  constructor(
    readonly machine: string,
    { nearest, deleted = false }: { nearest?: string; deleted?: boolean } = {},
  ) {
    super(
      deleted
        ? `Machine ${machine} was deleted; no other machine is given its name`
        : `Machine ${machine} does not exist (it may have been deleted)${nearest ? `. Did you mean ${nearest}?` : ''}`,
    );
  }
}

interface EngineContext {
  manifest: MachineManifest;
  store: MachineStore;
  createEngine: EngineFactory;
  outputLimit: number;
  tenant(): Promise<string | undefined>;
  queue: InstructionQueue;
  notices: MachineNotices;
  setState(state: MachineState): void;
  isDeleted(): boolean;
}

/**
 * A machine's engine through its life: started and swapped in from the snapshot (`warm`), the
 * state marked changed (`dirty`) until it is saved, and stopped, or dropped when its process died.
 */
export class MachineEngine {
  /** The running engine, while the machine is warm. */
  current?: Engine;
  /** The state changed since it was last saved. */
  dirty = false;

  constructor(private readonly context: EngineContext) {}

  get #name(): string {
    return this.context.manifest.name;
  }

  /**
   * A new engine, started, and restored from `snapshot` when one is given. When that restore
   * fails the engine is stopped and the error is the promise's: `warm` then starts afresh.
   */
  async ahead(snapshot: string | null): Promise<EngineAhead> {
    const engine = await this.#start();
    if (!snapshot) return { engine, restored: false, notices: [] };
    try {
      return { engine, restored: true, ...(await engine.restore(snapshot)) };
    } catch (error) {
      await engine.stop();
      throw error;
    }
  }

  /**
   * Starts the engine, swapping the machine in from its snapshot when it has one. `ahead`: an
   * engine a rollback started (and perhaps restored) early, used when it came up.
   */
  async warm(ahead?: Promise<EngineAhead>): Promise<Engine> {
    const { store, notices, manifest } = this.context;
    if (this.current) {
      void ahead?.then(
        ({ engine }) => engine.stop(),
        () => {},
      );
      return this.current;
    }
    const early = await ahead?.catch(() => undefined);
    const engine = early?.engine ?? (await this.#start());
    if (early?.restored) notices.add(...early.notices);
    else if (await store.hasSnapshot(this.#name)) {
      try {
        notices.add(...(await engine.restore(store.snapshotPath(this.#name))).notices);
      } catch (error) {
        await engine.stop();
        // A snapshot of another engine build is sound, just not for this build: refuse, and
        // leave the machine untouched for the version that made it.
        if (errorCodeOf(error) === 'SnapshotVersionMismatch') throw error;
        // Keep the unreadable snapshot for inspection and carry on from an empty machine.
        const kept = (await store.setAside(store.snapshotPath(this.#name))) ?? store.snapshotPath(this.#name);
        notices.addLost({ name: '*', reason: `the snapshot could not be restored (${(error as Error).message}); it was kept as ${kept}` });
        manifest.snapshot = null;
        return this.warm();
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
    if (this.context.isDeleted()) {
      await engine.stop();
      throw new MachineGoneError(this.#name, { deleted: true });
    }
    this.current = engine;
    this.dirty = false;
    // Written with the manifest's next save, as the machine's state is.
    if (engine.runtime) manifest.runtime = engine.runtime;
    void engine.exited.then((exit) => {
      if (this.current !== engine || exit.requested) return;
      // Died between instructions (killed from outside, out of memory): come back on next use.
      notices.add(`The Python process ${exit.signal ? `was killed by ${exit.signal}` : `exited (code ${exit.code})`} while idle. ${notices.restoreNotice()}`);
      this.drop(engine);
    });
    this.context.setState('warm');
    return engine;
  }

  /** Stops the engine; the machine is swapped out. `last`: the server is going away (`Engine.stop`). */
  async stop(options?: { last?: boolean }): Promise<void> {
    const engine = this.current;
    if (!engine) return;
    this.current = undefined;
    await engine.stop(options);
    this.context.setState('swapped');
  }

  /** Forgets an engine whose process is gone: the next use swaps the machine in again. */
  drop(engine: Engine): void {
    if (this.current !== engine) return;
    this.current = undefined;
    this.dirty = false;
    if (!this.context.queue.current) this.context.setState('swapped');
  }

  /** The engine, no longer the machine's: for a caller that stops it later (a rollback hands over to the next). */
  release(): Engine | undefined {
    const engine = this.current;
    this.current = undefined;
    return engine;
  }

  async #start(): Promise<Engine> {
    const { manifest, store } = this.context;
    // A folder removed or renamed behind the machine's back leaves it working in its own, and saying so.
    const folder = manifest.workdir && existsSync(manifest.workdir) ? manifest.workdir : undefined;
    if (manifest.workdir && !folder)
      this.context.notices.add(`${manifest.workdir}, where this machine works, is gone: it works in a folder of its own until given another.`);
    const tenant = await this.context.tenant();
    const engine = this.context.createEngine({
      ...(tenant ? { tenant } : {}),
      memoryMb: manifest.memoryMb,
      outputLimit: this.context.outputLimit,
      workdir: store.filesDir(this.#name),
      environment: store.environmentDir(this.#name),
      python: manifest.python,
      workspace: manifest.workspace,
      ...(folder ? { folder } : {}),
      network: manifest.network,
    });
    await engine.start();
    return engine;
  }
}
