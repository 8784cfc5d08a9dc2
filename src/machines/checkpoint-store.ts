import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { linkOrCopy, symlinkIfAllowed } from '../platform/file-links.ts';
import { commitFile, writeFileAtomic } from '../platform/atomic-file.ts';
import { ContentHashes, listFolder } from '../platform/folder-tree.ts';
import { PhaseClock } from '../platform/phase-timings.ts';
import type { CheckpointInfo } from '../shared/types.ts';

/**
 * The format of a checkpoint's record (absent in records of 0.1.0, which are the same format). A
 * record of a newer format is not listed, and neither it nor the blobs it may name are removed.
 */
const CHECKPOINT_FORMAT = 1;

const CheckpointRecord = z.looseObject({
  version: z.literal(CHECKPOINT_FORMAT).optional(),
  id: z.string(),
  label: z.string().nullable(),
  seq: z.number().int().nonnegative(),
  at: z.string(),
  bytes: z.number().nonnegative(),
  auto: z.boolean(),
  /** False for the state of a machine that had run nothing: rolling back to it empties the machine. */
  hasSnapshot: z.boolean(),
  /** The machine's own folder (python engine files), by content; null for a sandbox machine, whose files are in its snapshot. */
  files: z
    .array(
      z.object({
        path: z.string(),
        kind: z.enum(['file', 'dir', 'link']),
        mode: z.number().int(),
        sha256: z.string().optional(),
        target: z.string().optional(),
      }),
    )
    .nullable(),
});
type CheckpointRecord = z.infer<typeof CheckpointRecord>;
type FileEntry = NonNullable<CheckpointRecord['files']>[number];

const RECORD = 'checkpoint.json';
/** The highest id of a checkpoint removed while it was the newest: ids are never given twice. */
const LAST_ID = 'last-id';
const SNAPSHOT = 'snapshot';
const BLOBS = 'blobs';

/** What a checkpoint is made of: the machine's snapshot file at that point, and its own folder when the engine keeps files there. */
export interface CheckpointSource {
  seq: number;
  snapshotPath: string | null;
  filesDir: string | null;
}

/**
 * A machine's checkpoints, in `machines/<name>/checkpoints/`: one folder per checkpoint, holding
 * its record and a hard link to the snapshot file it was taken from (snapshots are replaced by
 * rename, never written in place, so the link keeps that state for as long as the checkpoint
 * lives), and `blobs/` with the contents of the python engine's files by hash, shared by every
 * checkpoint that holds them. A checkpoint folder appears by rename once whole: a crash leaves
 * a hidden temporary folder, never half a checkpoint.
 */
export class CheckpointStore {
  /** The hash of each file seen: an unchanged file is not read again. */
  readonly #hashes = new ContentHashes();

  constructor(readonly dir: string) {}

  async list(): Promise<CheckpointInfo[]> {
    return (await this.#records()).map(info);
  }

  /** Takes a checkpoint of `source`; its id is the next number. */
  async add(source: CheckpointSource, label: string | null, auto: boolean): Promise<CheckpointInfo> {
    const clock = new PhaseClock();
    await mkdir(join(this.dir, BLOBS), { recursive: true, mode: 0o700 });
    await this.#sweep();
    const temp = join(this.dir, `.new-${randomBytes(6).toString('hex')}`);
    try {
      await mkdir(temp);
      let bytes = 0;
      if (source.snapshotPath) {
        await linkOrCopy(source.snapshotPath, join(temp, SNAPSHOT));
        bytes += (await stat(source.snapshotPath)).size;
      }
      let files: FileEntry[] | null = null;
      if (source.filesDir) {
        const saved = await this.#saveFiles(source.filesDir);
        files = saved.files;
        bytes += saved.newBytes;
      }
      const id = String((await this.#highestId()) + 1);
      const record: CheckpointRecord = {
        version: CHECKPOINT_FORMAT,
        id,
        label,
        seq: source.seq,
        at: new Date().toISOString(),
        bytes,
        auto,
        hasSnapshot: source.snapshotPath !== null,
        files,
      };
      await writeFileAtomic(join(temp, RECORD), JSON.stringify(record));
      // Synced too: a checkpoint is a promise that outlives a power cut.
      await commitFile(temp, join(this.dir, id));
      clock.lap(`checkpoint: ${auto ? 'automatic one ' : ''}linked and recorded`);
      return info(record);
    } catch (error) {
      // Nothing half made stays, nor blobs only it would have named: the error may be a full disk.
      await this.#sweep().catch(() => {});
      await this.#collectBlobs().catch(() => {});
      throw error;
    }
  }

  /** A checkpoint by id or label (the newest with that label); a label is never a bare number. */
  async find(idOrLabel: string): Promise<CheckpointInfo | undefined> {
    const found = /^\d+$/.test(idOrLabel) ? await this.#record(idOrLabel) : (await this.#records()).findLast((r) => r.label === idOrLabel);
    return found && info(found);
  }

  /** The snapshot file a checkpoint holds (none when it is of a machine that had run nothing). */
  async snapshotOf(id: string): Promise<string | null> {
    return (await this.#record(id))?.hasSnapshot ? join(this.dir, id, SNAPSHOT) : null;
  }

  /**
   * Puts the checkpoint's snapshot at `snapshotTarget` (removed when it had none) and its files back
   * in `filesDir`; answers what of the files could not be put back, in words.
   */
  async restore(id: string, snapshotTarget: string, filesDir: string | null): Promise<string[]> {
    const record = await this.#record(id);
    if (!record) throw new Error(`checkpoint ${id} is gone`);
    const temp = `${snapshotTarget}.rollback-${randomBytes(6).toString('hex')}`;
    try {
      if (record.hasSnapshot) await linkOrCopy(join(this.dir, id, SNAPSHOT), temp);
      const lost = filesDir && record.files ? await this.#restoreFiles(record.files, filesDir) : [];
      if (record.hasSnapshot) await rename(temp, snapshotTarget);
      else await rm(snapshotTarget, { force: true });
      return lost;
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }

  async remove(id: string): Promise<void> {
    await this.#rememberId(id);
    // Renamed away first, so a crash midway never leaves a checkpoint without its parts.
    const doomed = join(this.dir, `.gone-${id}-${randomBytes(4).toString('hex')}`);
    await rename(join(this.dir, id), doomed);
    await rm(doomed, { recursive: true, force: true });
    await this.#collectBlobs();
  }

  /** Keeps the newest `keep` automatic checkpoints, and `spare` whatever its age; named ones stay until deleted. */
  async prune(keep: number, spare?: string): Promise<void> {
    const autos = (await this.#records()).filter((r) => r.auto && r.id !== spare);
    const old = autos.slice(0, Math.max(0, autos.length - keep));
    if (!old.length) return;
    for (const record of old) {
      await this.#rememberId(record.id);
      await rm(join(this.dir, record.id), { recursive: true, force: true });
    }
    await this.#collectBlobs();
  }

  /** The highest id given so far: of the checkpoints there are, or one removed while it was the newest. */
  async #highestId(): Promise<number> {
    const removed = Number(await readFile(join(this.dir, LAST_ID), 'utf8').catch(() => '0')) || 0;
    return Math.max(removed, ...(await this.#ids()).map(Number));
  }

  /** Before the newest checkpoint goes, its id is written down, so that the next one does not take it. */
  async #rememberId(id: string): Promise<void> {
    if (Number(id) >= (await this.#highestId())) await writeFileAtomic(join(this.dir, LAST_ID), id);
  }

  /** The ids of every checkpoint folder, readable or not. */
  async #ids(): Promise<string[]> {
    return (await readdir(this.dir).catch(() => [] as string[])).filter((n) => /^\d+$/.test(n));
  }

  async #records(): Promise<CheckpointRecord[]> {
    const records = await Promise.all((await this.#ids()).map((n) => this.#record(n)));
    return records.filter((r) => r !== undefined).sort((a, b) => Number(a.id) - Number(b.id));
  }

  async #record(id: string): Promise<CheckpointRecord | undefined> {
    if (!/^\d+$/.test(id)) return undefined;
    const text = await readFile(join(this.dir, id, RECORD), 'utf8').catch(() => null);
    try {
      const parsed = text === null ? null : CheckpointRecord.safeParse(JSON.parse(text));
      return parsed?.success ? parsed.data : undefined;
    } catch {
      return undefined; // damaged: not listed, and nothing it names is removed
    }
  }

  /** Stores every file of `root` by content (the new ones only) and answers the listing and the bytes it added. */
  async #saveFiles(root: string): Promise<{ files: FileEntry[]; newBytes: number }> {
    const files: FileEntry[] = [];
    let newBytes = 0;
    for (const entry of await listFolder(root)) {
      const { path, kind, mode } = entry;
      if (kind !== 'file') {
        files.push(kind === 'link' ? { path, kind, mode, target: entry.target } : { path, kind, mode });
        continue;
      }
      const sha256 = (await this.#hashes.of(join(root, path), entry))[0]!;
      const blob = join(this.dir, BLOBS, sha256);
      if (!(await stat(blob).catch(() => null))) {
        const temp = `${blob}.${randomBytes(4).toString('hex')}.tmp`;
        await copyFile(join(root, path), temp, constants.COPYFILE_FICLONE);
        await rename(temp, blob);
        newBytes += entry.size;
      }
      files.push({ path, kind, mode, sha256 });
    }
    return { files, newBytes };
  }

  /**
   * Makes `root` hold exactly `files`, built beside it, then swapped in; but for a symbolic link the
   * system will not make (Windows, without Developer Mode): that is answered, in words.
   */
  async #restoreFiles(files: FileEntry[], root: string): Promise<string[]> {
    const temp = `${root}.rollback-${randomBytes(6).toString('hex')}`;
    const lost: string[] = [];
    await mkdir(temp, { mode: 0o700 });
    try {
      for (const entry of files) {
        const path = join(temp, entry.path);
        if (entry.kind === 'dir') await mkdir(path, { mode: entry.mode });
        else if (entry.kind === 'link') {
          const refused = await symlinkIfAllowed(entry.target!, path);
          if (refused) lost.push(`The link ${entry.path} -> ${entry.target} could not be made again: ${refused}.`);
        } else {
          await copyFile(join(this.dir, BLOBS, entry.sha256!), path, constants.COPYFILE_FICLONE);
          await chmod(path, entry.mode);
        }
      }
      const old = `${root}.old-${randomBytes(6).toString('hex')}`;
      await rename(root, old).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT') throw error;
      });
      await rename(temp, root);
      await rm(old, { recursive: true, force: true });
      this.#hashes.clear();
      return lost;
    } catch (error) {
      await rm(temp, { recursive: true, force: true });
      throw error;
    }
  }

  /** Removes what a crash left half made: temporary folders and blob copies. The machine's queue makes this the only writer. */
  async #sweep(): Promise<void> {
    const leftovers = [
      ...(await readdir(this.dir)).filter((n) => n.startsWith('.')).map((n) => join(this.dir, n)),
      ...(await readdir(join(this.dir, BLOBS))).filter((n) => n.endsWith('.tmp')).map((n) => join(this.dir, BLOBS, n)),
    ];
    await Promise.all(leftovers.map((path) => rm(path, { recursive: true, force: true })));
  }

  /** Removes the blobs no checkpoint names any more; none while a checkpoint cannot be read (it may name any). */
  async #collectBlobs(): Promise<void> {
    const records = await this.#records();
    if (records.length !== (await this.#ids()).length) return;
    const used = new Set(records.flatMap((r) => (r.files ?? []).map((f) => f.sha256).filter((s) => s !== undefined)));
    const blobs = await readdir(join(this.dir, BLOBS)).catch(() => [] as string[]);
    await Promise.all(blobs.filter((b) => !used.has(b)).map((b) => rm(join(this.dir, BLOBS, b), { force: true })));
  }
}

function info(record: CheckpointRecord): CheckpointInfo {
  return { id: record.id, label: record.label, seq: record.seq, at: record.at, bytes: record.bytes, auto: record.auto };
}
