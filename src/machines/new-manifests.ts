import { realpath, stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { engineDescriptor } from '../engines/descriptors.ts';
import { InvalidRequestError, type EngineName, type NewMachineOptions } from '../shared/requests.ts';
import type { MachineManifest } from './machine-store.ts';

/** The manifest of a new machine `name`, as `options` ask for it on `engine`. */
export function newManifest(
  name: string,
  engine: EngineName,
  memoryMb: number,
  options: NewMachineOptions,
  folders: Pick<MachineManifest, 'workspace' | 'workdir'> = {},
): MachineManifest {
  const now = new Date().toISOString();
  const { takes } = engineDescriptor(engine);
  return {
    version: 1,
    name,
    createdAt: now,
    tags: options.tags ?? {},
    engine,
    memoryMb,
    // Each engine takes its own options: a client may send both sets for whichever engine runs.
    ...(options.python && takes.python ? { python: options.python } : {}),
    ...(folders.workspace ? { workspace: folders.workspace } : {}),
    ...(folders.workdir ? { workdir: folders.workdir } : {}),
    ...(options.network && takes.network ? { network: true } : {}),
    nextSeq: 0,
    lastUsedAt: now,
    snapshot: null,
  };
}

/** The manifest of `name`, a fork of the machine `origin` describes, with `tags`, working in `workdir`: its own from here on. */
export function forkManifest(origin: MachineManifest, name: string, tags: Record<string, string>, workdir: string | undefined): MachineManifest {
  const now = new Date().toISOString();
  const manifest: MachineManifest = { ...structuredClone(origin), name, createdAt: now, lastUsedAt: now, tags, nextSeq: 0, snapshot: null };
  delete manifest.rebuilt;
  delete manifest.workdir;
  return workdir ? { ...manifest, workdir } : manifest;
}

/**
 * A host folder a machine is given (`what`: "workspace", "working folder"), resolved on the
 * server: a client's relative path means nothing here.
 */
export async function realFolder(path: string, what: string): Promise<string> {
  if (!isAbsolute(path)) throw new InvalidRequestError(`The ${what} must be an absolute path, not ${path}`);
  const resolved = await realpath(path).catch(() => {
    throw new InvalidRequestError(`The ${what} ${path} does not exist`);
  });
  if (!(await stat(resolved)).isDirectory()) throw new InvalidRequestError(`The ${what} ${path} is not a folder`);
  return resolved;
}
