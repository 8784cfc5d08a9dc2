import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from '../platform/atomic-file.ts';
import { CodedError } from '../platform/coded-error.ts';
import { CONFINED_ENGINE, PERSONS_ENGINE } from '../engines/descriptors.ts';
import { EngineName, NewMachineName } from '../shared/requests.ts';

/** What a Perennial kernelspec records of itself in `metadata.perennial`; `version` 1. */
export const PerennialSpec = z.looseObject({
  version: z.number().int(),
  engine: EngineName.optional(),
  python: z.string().optional(),
  machine: z.string().optional(),
  /** The server its machines are on (`--server`); none: the local server on the data dir. */
  server: z.string().optional(),
});
export type PerennialSpec = z.infer<typeof PerennialSpec>;

/** A kernelspec's name as Jupyter takes it (it lowercases what it finds). */
export const KernelName = z.string().regex(/^[a-z0-9._-]{1,64}$/, 'a kernel name is 1 to 64 lowercase letters, digits, or ._-');

export interface KernelSpecChoice {
  name: string;
  displayName: string;
  engine?: EngineName;
  python?: string;
  machine?: string;
  server?: string;
}

/** A Perennial kernelspec found in one of Jupyter's folders. */
export interface FoundKernelSpec {
  name: string;
  folder: string;
  displayName: string;
  perennial: PerennialSpec;
  argv: string[];
}

export class KernelSpecError extends CodedError {
  static override readonly errorCode = 'KernelSpec';
}

/**
 * The name and display name a kernelspec gets when none is given: `perennial`, "Python
 * (Perennial)" for the person's own Python (the default); another engine's (`perennial-sandbox`)
 * a pinned machine's and another server's (whose default is its sandbox) say so, and have names
 * of their own, so that each can be installed beside it.
 */
export function defaultKernelChoice(options: Partial<KernelSpecChoice>): KernelSpecChoice {
  const machine = options.machine === undefined ? null : NewMachineName.safeParse(options.machine);
  if (machine && !machine.success) throw new KernelSpecError(`--machine ${options.machine}: ${machine.error.issues[0]!.message}`);
  const host = options.server === undefined ? null : serverHost(options.server);
  // Another engine than the default (the person's own Python, a server's sandbox) says which it is.
  const other = options.engine && options.engine !== (host ? CONFINED_ENGINE : PERSONS_ENGINE) ? options.engine : null;
  const own = options.machine ? `machine ${options.machine}` : other;
  const what = [own, host].filter(Boolean).join(', ') || null;
  const suffix =
    [options.machine ?? other, host]
      .filter(Boolean)
      .join('-')
      .toLowerCase()
      .replace(/[^a-z0-9._-]/g, '-')
      .slice(0, 54) || null;
  const name = options.name ?? (suffix ? `perennial-${suffix}` : 'perennial');
  const parsed = KernelName.safeParse(name);
  if (!parsed.success) throw new KernelSpecError(`--name ${name}: ${parsed.error.issues[0]!.message}`);
  return { ...options, name, displayName: options.displayName ?? `Python (Perennial${what ? `, ${what}` : ''})` };
}

/**
 * Writes `<folder>/kernels/<name>/kernel.json`: `launcher` (this Node and this CLI, with the
 * data dir when one was named) runs `perennial kernel` on Jupyter's connection file. Interrupts
 * are messages, which work on every system.
 */
export async function installKernelSpec(folder: string, choice: KernelSpecChoice, launcher: string[]): Promise<string> {
  const flags = [
    ...(choice.machine ? ['--machine', choice.machine] : []),
    ...(choice.engine ? ['--engine', choice.engine] : []),
    ...(choice.python ? ['--python', choice.python] : []),
  ];
  const spec = {
    argv: [...launcher, 'kernel', '--connection-file', '{connection_file}', ...flags],
    display_name: choice.displayName,
    language: 'python',
    interrupt_mode: 'message',
    env: {},
    metadata: {
      debugger: false,
      perennial: {
        version: 1,
        ...(choice.engine ? { engine: choice.engine } : {}),
        ...(choice.python ? { python: choice.python } : {}),
        ...(choice.machine ? { machine: choice.machine } : {}),
        ...(choice.server ? { server: choice.server } : {}),
      },
    },
  };
  const dir = join(folder, 'kernels', choice.name);
  try {
    await mkdir(dir, { recursive: true });
    await writeFileAtomic(join(dir, 'kernel.json'), `${JSON.stringify(spec, null, 2)}\n`, 0o644);
  } catch (error) {
    throw new KernelSpecError(`Cannot write the kernelspec in ${dir}: ${(error as Error).message}`);
  }
  return dir;
}

/** The host (and port) a server's address names, for a kernel's name; the address itself when it is not one. */
function serverHost(server: string): string {
  return URL.canParse(server) ? new URL(server).host : server;
}

/** The Perennial kernelspecs in `folders` (Jupyter's, in its order); the first of a name is the one Jupyter uses. */
export async function listKernelSpecs(folders: string[]): Promise<FoundKernelSpec[]> {
  const found: FoundKernelSpec[] = [];
  for (const folder of folders) {
    const names = await readdir(join(folder, 'kernels')).catch(() => [] as string[]);
    for (const name of names.sort()) {
      const dir = join(folder, 'kernels', name);
      const spec = await readKernelJson(join(dir, 'kernel.json'));
      if (spec) found.push({ name: name.toLowerCase(), folder: dir, ...spec });
    }
  }
  return found;
}

/** Removes the Perennial kernelspecs called `name` from `folders`: the folders removed. */
export async function removeKernelSpec(folders: string[], name: string): Promise<string[]> {
  const matching = (await listKernelSpecs(folders)).filter((spec) => spec.name === name.toLowerCase());
  for (const spec of matching) {
    try {
      await rm(spec.folder, { recursive: true, force: true });
    } catch (error) {
      throw new KernelSpecError(`Cannot remove ${spec.folder}: ${(error as Error).message}`);
    }
  }
  return matching.map((spec) => spec.folder);
}

const KernelJson = z.looseObject({
  argv: z.array(z.string()),
  display_name: z.string(),
  metadata: z.looseObject({ perennial: PerennialSpec }),
});

/** A kernel.json that is Perennial's, or null (another kernel's, or unreadable). */
async function readKernelJson(path: string): Promise<Omit<FoundKernelSpec, 'name' | 'folder'> | null> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const spec = KernelJson.parse(JSON.parse(text));
    return { displayName: spec.display_name, perennial: spec.metadata.perennial, argv: spec.argv };
  } catch {
    return null;
  }
}
