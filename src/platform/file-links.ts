import { constants } from 'node:fs';
import { copyFile, link, symlink } from 'node:fs/promises';

/** What a file system says when it has no hard links, or none between these two folders. */
const NO_HARD_LINKS = new Set(['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);
/** What a system says when it makes no symbolic links, or not for this user (Windows without Developer Mode). */
const NO_SYMLINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/**
 * Gives the file `existing`, which is only ever replaced and never written in place, the second
 * name `path`: a hard link where the file system has them (no bytes copied), else a copy (FAT and
 * exFAT drives, another file system).
 */
export async function linkOrCopy(existing: string, path: string): Promise<void> {
  try {
    await link(existing, path);
  } catch (error) {
    if (!NO_HARD_LINKS.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
    await copyFile(existing, path, constants.COPYFILE_FICLONE);
  }
}

/**
 * Makes the symbolic link `path` to `target`, or answers why the system would not (Windows makes
 * them only in Developer Mode or for an administrator; some file systems have none). Other
 * failures are thrown.
 */
export async function symlinkIfAllowed(target: string, path: string): Promise<string | undefined> {
  try {
    await symlink(target, path);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (!NO_SYMLINKS.has(code)) throw error;
    return process.platform === 'win32'
      ? `Windows makes symbolic links only in Developer Mode or for an administrator (${code})`
      : `this file system makes no symbolic links here (${code})`;
  }
}
