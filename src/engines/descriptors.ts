import type { EngineDescriptor } from './descriptor.ts';
import { pythonDescriptor } from './python/descriptor.ts';
import { sandboxDescriptor } from './sandbox/descriptor.ts';

/** Every engine, the default for new machines first (where it is available). A new engine is a folder and a line here. */
export const ENGINES = [sandboxDescriptor, pythonDescriptor] as const;

/** An engine's name. */
export type EngineName = (typeof ENGINES)[number]['name'];

export const ENGINE_NAMES = ENGINES.map((engine) => engine.name) as [EngineName, ...EngineName[]];

/** The engine that runs a person's own interpreter, with their packages: what a person's notebook runs on by default. */
export const PERSONS_ENGINE: EngineName = ENGINES.find((engine) => engine.takes.python)!.name;

/** The engine whose machines reach nothing of the host but what they are given: the one people make on a team's server. */
export const CONFINED_ENGINE: EngineName = ENGINES.find((engine) => engine.confined)!.name;

/** The engine named `name`. */
export function engineDescriptor(name: EngineName): EngineDescriptor<EngineName> {
  return ENGINES.find((engine) => engine.name === name)!;
}
