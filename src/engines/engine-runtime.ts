import type { EngineName } from './descriptors.ts';
import type { BaseImageShelf } from './base-image-shelf.ts';
import type { EngineFactory } from './engine.ts';
import type { PyodideRuntime } from './sandbox/pyodide-runtimes.ts';
import type { EngineStatus, MachineRuntime } from '../shared/types.ts';

export interface EngineSetOptions {
  dataDir: string;
  /** Sandbox processes kept ready, Pyodide booted ahead, for new machines and swap-ins. Default 1. */
  sandboxPoolSize?: number;
  /** A pool (the sandbox's, an interpreter's) is emptied after this long without a machine of it made or swapped in. Default 300 s. */
  poolIdleSeconds?: number;
  /** The Pyodide build new sandbox machines run and upgrades go to; default the newest (benchmarks compare builds with it). */
  sandboxPyodide?: PyodideRuntime;
  /** Where sandbox base images are shared with other nodes (a cluster's). */
  baseImages?: BaseImageShelf;
}

/** One engine as it runs for a data dir: what `openEngines` (index.ts) asks of each. */
export interface EngineRuntime {
  readonly name: EngineName;
  /** Makes its machines' engines; none where it is unavailable here (its status says why). */
  readonly factory?: EngineFactory;
  status(): EngineStatus;
  /** The newest runtime its machines can be upgraded to; none where the user chose it. */
  newestRuntime(): MachineRuntime | undefined;
  /** What the snapshot file at `path` runs on, when it can tell without loading it. */
  snapshotRuntime(path: string): Promise<MachineRuntime | undefined>;
  /** Throws what would keep a machine with these options from starting, before it is made. */
  assertStartable(options: { python?: string }): Promise<void>;
  /** Starts what makes its first machine fast. */
  prewarm(): void;
  close(): Promise<void>;
}
