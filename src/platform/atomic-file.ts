import { open, rename, unlink } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

/** A temporary name beside `path`, so a rename onto `path` stays on one file system. */
export function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
}

/** Replaces `path` so that a crash leaves either the old or the new contents, never a mix. */
export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  const temp = tempPathFor(path);
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temp).catch(() => {});
    throw error;
  }
  await handle.close();
  await commitFile(temp, path);
}

/** Renames a fully written (and synced) temporary file onto `path` and syncs the folder. */
export async function commitFile(temp: string, path: string): Promise<void> {
  await rename(temp, path);
  await syncDir(dirname(path));
}

async function syncDir(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch {
    // Some platforms (Windows) cannot open or sync a directory; the rename is still atomic there.
  } finally {
    await handle?.close();
  }
}
