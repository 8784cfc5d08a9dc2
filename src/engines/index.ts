import type { EngineName } from '../shared/types.ts';
import type { EngineFactory } from './engine.ts';
import { PythonEngine } from './python/python-engine.ts';

/** The engines this build can run, by name. */
export const ENGINES: Partial<Record<EngineName, EngineFactory>> = {
  python: (options) => new PythonEngine(options),
};

/** Default memory cap per engine, in MiB. */
export const DEFAULT_MEMORY_MB: Record<EngineName, number> = {
  // The python engine caps the data segment, which imports of numpy and friends already take ~250 MiB of.
  python: 2048,
  sandbox: 512,
};

export function availableEngines(): EngineName[] {
  return Object.keys(ENGINES) as EngineName[];
}
