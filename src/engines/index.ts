import type { EngineName } from './descriptors.ts';
import type { EngineFactory } from './engine.ts';
import type { EngineRuntime, EngineSetOptions } from './engine-runtime.ts';
import { pythonInDataDir } from './python/python-in-data-dir.ts';
import { sandboxInDataDir } from './sandbox/sandbox-in-data-dir.ts';
import type { EngineStatus, MachineRuntime } from '../shared/types.ts';

export type { EngineSetOptions } from './engine-runtime.ts';

/** How each engine runs for a data dir, in the descriptors' order (descriptors.ts): a new engine is a line here too. */
const IN_DATA_DIR: Array<(options: EngineSetOptions) => EngineRuntime> = [sandboxInDataDir, pythonInDataDir];

/** The engines of one data dir, with what each shares among its machines (the sandbox's pool and base image). */
export interface EngineSet {
  readonly factories: Partial<Record<EngineName, EngineFactory>>;
  status(): EngineStatus[];
  /** The newest runtime an engine's machines can be upgraded to; none where the user chose it (python). */
  newestRuntime(engine: EngineName): MachineRuntime | undefined;
  /** What the snapshot file at `path` runs on, when its engine can tell without loading it. */
  snapshotRuntime(engine: EngineName, path: string): Promise<MachineRuntime | undefined>;
  /** Throws what would keep a machine of `engine` with these options from starting, before it is made. */
  assertStartable(engine: EngineName, options: { python?: string }): Promise<void>;
  /** Starts what makes the first machine fast (the sandbox pool). */
  prewarm(): void;
  close(): Promise<void>;
}

export function openEngines(options: EngineSetOptions): EngineSet {
  const engines = IN_DATA_DIR.map((open) => open(options));
  const of = (name: EngineName) => engines.find((engine) => engine.name === name);
  return {
    factories: Object.fromEntries(engines.flatMap((engine) => (engine.factory ? [[engine.name, engine.factory]] : []))),
    status: () => engines.map((engine) => engine.status()),
    newestRuntime: (engine) => of(engine)?.newestRuntime(),
    snapshotRuntime: async (engine, path) => of(engine)?.snapshotRuntime(path),
    assertStartable: async (engine, startOptions) => of(engine)?.assertStartable(startOptions),
    prewarm: () => engines.forEach((engine) => engine.prewarm()),
    close: async () => {
      await Promise.all(engines.map((engine) => engine.close()));
    },
  };
}
