import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, rename, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { z } from 'zod';
import { KERNEL_ROOT } from '../../kernel/kernel-package.ts';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import type { FoundPython } from '../../platform/python-commands.ts';

/** The file in an environment's site-packages that names its interpreter's package folders (environment.py). */
const INTERPRETER_PTH = '_perennial_interpreter.pth';

/** What made a machine's environment, kept in it. */
const RECORD = 'perennial-environment.json';
const EnvironmentRecord = z.looseObject({
  version: z.literal(1),
  /** The interpreter it was made from (the machine's). */
  interpreter: z.string(),
  /** That interpreter's Python version. */
  python: z.string(),
  /** The environment's own interpreter, which runs the machine, from the environment's folder (a fork copies the folder). */
  executable: z.string(),
});
type EnvironmentRecord = z.infer<typeof EnvironmentRecord>;

const MAKE = `import sys
sys.path.insert(0, ${JSON.stringify(KERNEL_ROOT)})
from perennial_kernel.environment import make
print(make(sys.argv[1]))`;
const MAKE_TIMEOUT_MS = 120_000;

/**
 * A python machine's environment: its interpreter, its site-packages (where this module's
 * environments keep the file naming the interpreter's package folders), and what happened to an
 * earlier one, in words.
 */
export type MachineEnvironment = { python: string; sitePackages?: string; note?: string } | { error: string };

const making = new Map<string, Promise<MachineEnvironment>>();

/**
 * The machine's own environment in `dir` (see `perennial_kernel/environment.py`), made by `base`
 * the first time it is asked for. One made from another interpreter (PERENNIAL_PYTHON changed,
 * Python upgraded) is set aside, never removed, and a new one is made: the note says so.
 */
export function machineEnvironment(dir: string, base: FoundPython): Promise<MachineEnvironment> {
  const pending = making.get(dir) ?? ensure(dir, base).finally(() => making.delete(dir));
  making.set(dir, pending);
  return pending;
}

async function ensure(dir: string, base: FoundPython): Promise<MachineEnvironment> {
  const record = await readRecord(dir);
  if (record?.interpreter === base.executable && record.python === base.version) {
    const python = join(dir, record.executable);
    if (existsSync(python)) return { python, ...(await sitePackagesOf(dir)) };
  }
  let note: string | undefined;
  if (existsSync(dir)) {
    const aside = `${dir}-set-aside-${Date.now()}`;
    await rename(dir, aside);
    const was = record ? `${record.interpreter} (Python ${record.python})` : 'another interpreter';
    note = `This machine's packages were installed for ${was}, and it now runs ${base.executable} (Python ${base.version}): they were set aside in ${aside}; install them again.`;
  }
  try {
    const executable = await make(dir, base.executable);
    const made: EnvironmentRecord = { version: 1, interpreter: base.executable, python: base.version, executable: relative(dir, executable) };
    await writeFileAtomic(join(dir, RECORD), JSON.stringify(made));
    return { python: executable, ...(await sitePackagesOf(dir)), ...(note ? { note } : {}) };
  } catch (error) {
    // What a failed making left holds nothing of the user's, and would be set aside at every start.
    await rm(dir, { recursive: true, force: true });
    return { error: `${base.executable} could not make a virtual environment (${(error as Error).message.trim().split('\n').at(-1)})` };
  }
}

/** The environment's site-packages: `Lib/site-packages` (Windows) or `lib/pythonX.Y/site-packages`, the one holding the kernel's .pth file. */
async function sitePackagesOf(dir: string): Promise<{ sitePackages?: string }> {
  const lib = await readdir(join(dir, 'lib')).catch(() => [] as string[]);
  const candidates = [
    join(dir, 'Lib', 'site-packages'),
    ...lib.filter((name) => name.startsWith('python')).map((name) => join(dir, 'lib', name, 'site-packages')),
  ];
  const found = candidates.find((candidate) => existsSync(join(candidate, INTERPRETER_PTH)));
  return found ? { sitePackages: found } : {};
}

function make(dir: string, python: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-c', MAKE, dir], { encoding: 'utf8', timeout: MAKE_TIMEOUT_MS, windowsHide: true }, (error, stdout, stderr) => {
      if (error) reject(new Error(stderr.trim() || error.message));
      else resolve(stdout.trim());
    });
  });
}

async function readRecord(dir: string): Promise<EnvironmentRecord | null> {
  try {
    const parsed = EnvironmentRecord.safeParse(JSON.parse(await readFile(join(dir, RECORD), 'utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
