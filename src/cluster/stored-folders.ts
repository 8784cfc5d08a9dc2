import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, copyFile, mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { z } from 'zod';
import { ContentHashes, listFolder, type FolderEntry } from '../platform/folder-tree.ts';
import { symlinkIfAllowed } from '../platform/file-links.ts';
import { StoreUnavailableError, type ObjectStore } from './object-store.ts';

/**
 * A tree's format: a newer one is refused whole, since an older build would miss what it added.
 * Readers keep fields they do not know (`looseObject`), as every format here.
 */
const TREE_VERSION = 1;

const TreeEntry = z.looseObject({
  /** From the folder, with `/` between names. */
  path: z.string(),
  kind: z.enum(['file', 'dir', 'link']),
  mode: z.number().int(),
  size: z.number().int().nonnegative().optional(),
  /** A file's content, as the objects of its consecutive chunks. */
  chunks: z.array(z.string().regex(/^[0-9a-f]{64}$/)).optional(),
  target: z.string().optional(),
});
type TreeEntry = z.infer<typeof TreeEntry>;

const Tree = z.looseObject({ format: z.literal('perennial-folder'), version: z.number().int(), entries: z.array(TreeEntry) });

/** Files are stored in chunks this size: an appended file (a history) adds only its last ones. */
export const CHUNK_BYTES = 8 << 20;
/** Objects from this size up are sent only when the bucket lacks them. */
const ASK_FIRST_BYTES = 256 << 10;
/** Files read and sent at once by a commit (each with a chunk's buffer). */
const UPLOADS_AT_ONCE = 4;

/** What a commit of a folder made. */
export interface CommittedFolder {
  /** The tree's object: names the folder's whole content. */
  tree: string;
  /** The folder's size. */
  bytes: number;
  /** What this commit sent to the bucket. */
  uploadedBytes: number;
  /** Every object the tree needs, itself included. */
  objects: Set<string>;
}

/**
 * Folders kept in a bucket as objects named by the SHA-256 of their content, under a key prefix
 * of the caller's (a folder's home): each file in chunks (`<home>/objects/<2 hex>/<sha256>`),
 * and a tree object that lists the folder's files, folders and links with their chunks. An object
 * is written once and never changes, so a tree, once in the bucket, stays whole for as long as
 * its home keeps its objects. What the bucket already holds is not sent again (a node remembers
 * what it sent or read).
 */
export class StoredFolders {
  readonly #hashes = new ContentHashes(CHUNK_BYTES);
  /** Objects known to be in the bucket. */
  readonly #present = new Set<string>();

  constructor(private readonly store: ObjectStore) {}

  /**
   * Sends what of `root` the bucket lacks and answers the tree. Each file is read once, and
   * what is sent is what was read: a file appended to meanwhile is kept as it was when read.
   * `skip` leaves out an entry (by its path from `root`) and all it holds.
   */
  async commit(root: string, home: string, skip?: (path: string) => boolean): Promise<CommittedFolder> {
    const listed = await listFolder(root, skip);
    const entries: TreeEntry[] = listed.map((entry) => {
      const path = entry.path.split(sep).join('/');
      if (entry.kind === 'link') return { path, kind: 'link', mode: 0, target: entry.target };
      return entry.kind === 'dir' ? { path, kind: 'dir', mode: entry.mode } : { path, kind: 'file', mode: entry.mode, size: entry.size };
    });
    let uploadedBytes = 0;
    // Files are read and sent a few at a time: a commit waits on the bucket's round trips, not on this process.
    await inTurns(
      listed.flatMap((entry, i) => (entry.kind === 'file' ? [i] : [])),
      UPLOADS_AT_ONCE,
      async (i) => {
        const entry = listed[i]!;
        const full = join(root, entry.path);
        const known = this.#hashes.known(full, entry);
        if (known && known.every((chunk) => this.#present.has(objectKey(home, chunk)))) {
          entries[i]!.chunks = known;
          return;
        }
        const sent = await this.#send(full, home);
        this.#hashes.remember(full, entry, sent.chunks);
        Object.assign(entries[i]!, { chunks: sent.chunks, size: sent.size });
        uploadedBytes += sent.uploadedBytes;
      },
    );
    const bytes = entries.reduce((sum, entry) => sum + (entry.size ?? 0), 0);
    const body = Buffer.from(JSON.stringify({ format: 'perennial-folder', version: TREE_VERSION, entries }));
    const tree = sha256(body);
    await this.#put(home, tree, body);
    return { tree, bytes, uploadedBytes, objects: objectsOf(tree, entries) };
  }

  /**
   * Makes `root` hold exactly the folder of `tree`: built beside it (what `root` already holds
   * unchanged is copied, the rest read from the bucket), then swapped in whole. Answers what could
   * not be made again here, in words (a link, where the system makes none).
   */
  async materialize(tree: string, home: string, root: string): Promise<{ lost: string[]; objects: Set<string> }> {
    const entries = await this.#readTree(tree, home);
    const incoming = join(dirname(root), `.incoming-${basename(root)}-${randomBytes(6).toString('hex')}`);
    const lost: string[] = [];
    const old = new Map<string, FolderEntry>();
    for (const entry of await listFolder(root).catch(() => [])) old.set(entry.path.split(sep).join('/'), entry);
    await mkdir(incoming, { recursive: true, mode: 0o700 });
    try {
      for (const entry of entries) {
        const target = join(incoming, ...entry.path.split('/'));
        if (entry.kind === 'dir') await mkdir(target, { recursive: true, mode: 0o700 });
        else if (entry.kind === 'link') {
          const refused = await symlinkIfAllowed(entry.target ?? '', target);
          if (refused) lost.push(`The link ${entry.path} -> ${entry.target} could not be made again: ${refused}.`);
        } else await this.#writeFile(entry, target, old.get(entry.path), root, home);
      }
      // Folders' own modes last, deepest first: a read-only folder is filled before it is closed.
      for (const entry of entries.filter((e) => e.kind === 'dir').reverse()) await chmod(join(incoming, ...entry.path.split('/')), entry.mode);
      const aside = join(dirname(root), `.outgoing-${basename(root)}-${randomBytes(6).toString('hex')}`);
      const hadRoot = await rename(root, aside).then(
        () => true,
        (error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
          return false;
        },
      );
      await rename(incoming, root);
      if (hadRoot) await rm(aside, { recursive: true, force: true });
      this.#hashes.clear();
      return { lost, objects: objectsOf(tree, entries) };
    } catch (error) {
      await rm(incoming, { recursive: true, force: true });
      throw error;
    }
  }

  /** A file of the tree at `target`: copied from the folder's copy when that is the same, else read chunk by chunk. */
  async #writeFile(entry: TreeEntry, target: string, local: FolderEntry | undefined, root: string, home: string): Promise<void> {
    const chunks = entry.chunks ?? [];
    if (local?.kind === 'file' && local.size === entry.size) {
      const path = join(root, local.path);
      const localChunks = await this.#hashes.of(path, local);
      if (localChunks.length === chunks.length && localChunks.every((chunk, i) => chunk === chunks[i])) {
        await copyFile(path, target, constants.COPYFILE_FICLONE);
        await chmod(target, entry.mode);
        return;
      }
    }
    const file = await open(target, 'w', 0o600);
    try {
      for (const chunk of chunks) {
        const key = objectKey(home, chunk);
        const bytes = await this.store.get(key);
        if (!bytes) throw new StoreUnavailableError(`The bucket ${this.store.description} has lost ${key}, part of ${entry.path}`);
        if (sha256(bytes) !== chunk)
          throw new StoreUnavailableError(`The bucket ${this.store.description} holds damaged data at ${key}, part of ${entry.path}`);
        await file.write(bytes);
        this.#present.add(key);
      }
      await file.sync();
    } finally {
      await file.close();
    }
    await chmod(target, entry.mode);
  }

  async #readTree(tree: string, home: string): Promise<TreeEntry[]> {
    const key = objectKey(home, tree);
    const bytes = await this.store.get(key);
    if (!bytes) throw new StoreUnavailableError(`The bucket ${this.store.description} has lost the folder ${key} that a commit names`);
    const parsed = Tree.safeParse(JSON.parse(Buffer.from(bytes).toString('utf8')));
    if (!parsed.success) throw new StoreUnavailableError(`The folder ${key} in ${this.store.description} is not a folder this Perennial reads`);
    if (parsed.data.version > TREE_VERSION)
      throw new StoreUnavailableError(
        `The folder ${key} was written by a newer Perennial (format ${parsed.data.version}; this one reads ${TREE_VERSION}): update Perennial on this node`,
      );
    for (const entry of parsed.data.entries) {
      const parts = entry.path.split('/');
      if (!entry.path || parts.some((part) => part === '' || part === '.' || part === '..' || part.includes('\\')))
        throw new StoreUnavailableError(`The folder ${key} names a path outside itself: ${entry.path}`);
    }
    this.#present.add(key);
    return parsed.data.entries;
  }

  /** Reads the file at `path` chunk by chunk, sending each chunk the bucket lacks. */
  async #send(path: string, home: string): Promise<{ chunks: string[]; size: number; uploadedBytes: number }> {
    const file = await open(path, 'r');
    const chunks: string[] = [];
    let size = 0;
    let uploadedBytes = 0;
    try {
      // What the file holds now is what is read: one appended to meanwhile is kept as it was.
      const buffer = Buffer.allocUnsafe(Math.max(1, Math.min(CHUNK_BYTES, (await file.stat()).size)));
      for (;;) {
        let filled = 0;
        while (filled < buffer.length) {
          const { bytesRead } = await file.read(buffer, filled, buffer.length - filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        if (filled === 0 && chunks.length > 0) break;
        const bytes = buffer.subarray(0, filled);
        const chunk = sha256(bytes);
        if (await this.#put(home, chunk, bytes)) uploadedBytes += filled;
        chunks.push(chunk);
        size += filled;
        if (filled < CHUNK_BYTES) break;
      }
    } finally {
      await file.close();
    }
    return { chunks, size, uploadedBytes };
  }

  /**
   * Writes an object unless the bucket has it; answers whether it was sent. A small one is sent
   * without asking first: writing the same bytes again costs less than the question.
   */
  async #put(home: string, hash: string, bytes: Uint8Array): Promise<boolean> {
    const key = objectKey(home, hash);
    if (this.#present.has(key)) return false;
    const sent = bytes.length < ASK_FIRST_BYTES || !(await this.store.has(key));
    if (sent) await this.store.put(key, bytes);
    this.#present.add(key);
    return sent;
  }

  /** Removes the objects `hashes` of `home`. */
  async remove(home: string, hashes: Iterable<string>): Promise<void> {
    const keys = [...hashes].map((hash) => objectKey(home, hash));
    await this.store.delete(keys);
    for (const key of keys) this.#present.delete(key);
  }

  /** Removes every object under `prefix` but the objects `keep` of `home` (none: every one). */
  async sweep(prefix: string, home?: string, keep: Set<string> = new Set()): Promise<void> {
    const kept = new Set([...keep].map((hash) => objectKey(home ?? '', hash)));
    const doomed: string[] = [];
    for await (const key of this.store.list(prefix)) if (!kept.has(key)) doomed.push(key);
    await this.store.delete(doomed);
    for (const key of doomed) this.#present.delete(key);
  }
}

export function objectKey(home: string, hash: string): string {
  return `${home}/objects/${hash.slice(0, 2)}/${hash}`;
}

/** The objects a tree needs: its own and its files' chunks. */
function objectsOf(tree: string, entries: TreeEntry[]): Set<string> {
  return new Set([tree, ...entries.flatMap((entry) => entry.chunks ?? [])]);
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Runs `task` on every item, at most `limit` at a time. */
async function inTurns<T>(items: T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
