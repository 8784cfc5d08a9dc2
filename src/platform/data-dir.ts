import { randomUUID } from 'node:crypto';
import { mkdir, stat, unlink, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { CodedError } from './coded-error.ts';

/**
 * Where machines live: `PERENNIAL_HOME`, else the platform's per-user data folder
 * (`$XDG_DATA_HOME/perennial` or `~/.local/share/perennial` on Linux).
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PERENNIAL_HOME) return env.PERENNIAL_HOME;
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'perennial');
  if (process.platform === 'win32') return join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'perennial');
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'perennial');
}

/** The data dir cannot be made or written: its message says why, and how to choose another. */
export class DataDirUnusableError extends CodedError {
  static override readonly errorCode = 'DataDirUnusable';
}

/**
 * Makes the data dir if needed, a folder at a time (Node's recursive mkdir never returns on some
 * special file systems, such as /proc), and checks that it can be written; a data dir that cannot
 * be used is a DataDirUnusableError that says why.
 */
export async function prepareDataDir(dataDir: string): Promise<void> {
  const target = resolve(dataDir);
  const missing: string[] = [];
  let existing = target;
  while (!(await isFolder(existing))) {
    missing.unshift(existing);
    const parent = dirname(existing);
    if (parent === existing) break;
    existing = parent;
  }
  try {
    for (const folder of missing) {
      await mkdir(folder, { mode: 0o700 }).catch(async (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EEXIST') throw error;
        if (!(await isFolder(folder))) throw Object.assign(new Error(`${folder} is not a folder`), { code: 'ENOTDIR', path: folder });
      });
    }
    // Named for this call alone: two clients may prepare one data dir at once.
    const probe = join(target, `.write-test-${randomUUID()}`);
    await writeFile(probe, '', { mode: 0o600 });
    await unlink(probe);
  } catch (error) {
    throw new DataDirUnusableError(
      `The data dir ${dataDir} cannot be used: ${why(error as NodeJS.ErrnoException)}. Choose another with --data-dir DIR or PERENNIAL_HOME`,
    );
  }
}

async function isFolder(path: string): Promise<boolean> {
  return (await stat(path).catch(() => null))?.isDirectory() ?? false;
}

function why(error: NodeJS.ErrnoException): string {
  const path = error.path ?? 'it';
  switch (error.code) {
    case 'EACCES':
    case 'EPERM':
      return `you may not write in ${path}`;
    case 'EROFS':
      return `${path} is on a read-only file system`;
    case 'ENOTDIR':
    case 'EEXIST':
      return `${path} is a file, not a folder`;
    case 'ENOENT':
      return `no folder can be made at ${path}`;
    case 'ENOSPC':
      return 'the disk is full';
    default:
      return error.message;
  }
}
