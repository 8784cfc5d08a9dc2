import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join, relative } from 'node:path';

/** Windows' file ids do not fit the number Node gives them: two files could share one. */
const IDENTITIES = process.platform !== 'win32';

/** One thing in a folder: its path from the folder (the system's separators), and what it is. */
export interface FolderEntry {
  path: string;
  kind: 'file' | 'dir' | 'link';
  /** Permission bits; 0 for a link. */
  mode: number;
  size: number;
  mtimeMs: number;
  /** Where a link points. */
  target?: string;
  /** The file itself, whatever its names (device and inode), where the system tells reliably. */
  identity?: string;
}

/**
 * Everything under `root`, a folder before what it holds; `skip` leaves out an entry (and, for a
 * folder, all it holds) by its path from `root`. Other kinds (sockets, devices) are left out.
 */
export async function listFolder(root: string, skip: (path: string) => boolean = () => false): Promise<FolderEntry[]> {
  const entries: FolderEntry[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      const path = relative(root, full);
      if (skip(path)) continue;
      const stats = await lstat(full);
      const base = { path, size: stats.size, mtimeMs: stats.mtimeMs, ...(IDENTITIES && stats.ino ? { identity: `${stats.dev}:${stats.ino}` } : {}) };
      if (stats.isSymbolicLink()) entries.push({ ...base, kind: 'link', mode: 0, target: await readlink(full) });
      else if (stats.isDirectory()) {
        entries.push({ ...base, kind: 'dir', mode: stats.mode & 0o7777 });
        await walk(full);
      } else if (stats.isFile()) entries.push({ ...base, kind: 'file', mode: stats.mode & 0o7777 });
    }
  };
  await walk(root);
  return entries;
}

/** What tells a file's version apart: its size, its time written, and which file it is. */
export type FileStamp = Pick<FolderEntry, 'size' | 'mtimeMs' | 'identity'>;

/**
 * The SHA-256 of files' contents, a hash per `chunkBytes` (one for the whole file by default; an
 * empty file has one chunk), remembered by path (or the file's identity, which its hard links
 * share), size and time written: a file seen unchanged is not read again. Files here are replaced
 * by rename or appended to, so a write keeps neither the size nor the time.
 */
export class ContentHashes {
  readonly #known = new Map<string, { size: number; mtimeMs: number; chunks: string[] }>();

  constructor(readonly chunkBytes = Number.POSITIVE_INFINITY) {}

  async of(path: string, file: FileStamp): Promise<string[]> {
    const known = this.known(path, file);
    if (known) return known;
    const chunks: string[] = [];
    let hash = createHash('sha256');
    let filled = 0;
    for await (const data of createReadStream(path)) {
      let bytes = data as Buffer;
      while (bytes.length) {
        const take = Math.min(bytes.length, this.chunkBytes - filled);
        hash.update(bytes.subarray(0, take));
        filled += take;
        bytes = bytes.subarray(take);
        if (filled === this.chunkBytes) {
          chunks.push(hash.digest('hex'));
          hash = createHash('sha256');
          filled = 0;
        }
      }
    }
    if (filled > 0 || chunks.length === 0) chunks.push(hash.digest('hex'));
    this.remember(path, file, chunks);
    return chunks;
  }

  /** The hashes of a file seen unchanged, if it was. */
  known(path: string, { size, mtimeMs, identity }: FileStamp): string[] | undefined {
    const known = this.#known.get(identity ?? path);
    return known && known.size === size && known.mtimeMs === mtimeMs ? known.chunks : undefined;
  }

  /** Hashes `chunks` of a file read by another way (as `of` would have made them). */
  remember(path: string, { size, mtimeMs, identity }: FileStamp, chunks: string[]): void {
    this.#known.set(identity ?? path, { size, mtimeMs, chunks });
  }

  clear(): void {
    this.#known.clear();
  }
}
