import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { EngineName } from '../shared/requests.ts';
import { commitFile, tempPathFor, writeFileAtomic } from '../platform/atomic-file.ts';
import { HistoryLog } from './history-log.ts';

/**
 * The manifest's format. Like the data dir's, it goes up only for a change older builds would
 * misread; fields they may ignore are added without it, and kept when this build writes a manifest
 * a newer one extended.
 */
const MANIFEST_VERSION = 1;

/** What is kept on disk about a machine, besides its history and snapshot (`machine.json`). */
export const ManifestSchema = z.looseObject({
  version: z.literal(MANIFEST_VERSION),
  name: z.string(),
  createdAt: z.string(),
  tags: z.record(z.string(), z.string()),
  engine: EngineName,
  memoryMb: z.number().int().positive(),
  /** python engine: the interpreter chosen at creation; empty means the default at each start. */
  python: z.string().optional(),
  /** sandbox engine: the host folder mounted at /workspace. */
  workspace: z.object({ hostPath: z.string(), writable: z.boolean() }).optional(),
  /** The host folder the machine works in (a notebook's), either engine; absent: its own folder. */
  workdir: z.string().optional(),
  /** sandbox engine: network allowed. */
  network: z.boolean().optional(),
  nextSeq: z.number().int().nonnegative(),
  lastUsedAt: z.string(),
  snapshot: z.object({ at: z.string(), seq: z.number().int().nonnegative(), bytes: z.number().nonnegative() }).nullable(),
  /** Set when the server stopped and could not save the machine: when, and why. */
  unsaved: z.object({ at: z.string(), reason: z.string() }).optional(),
  /** What the machine last ran on (absent in manifests of builds before 0.2.0 until the machine runs). */
  runtime: z.object({ python: z.string(), pyodide: z.string().optional() }).optional(),
  /** Set when the manifest was rebuilt because it could not be read: what happened, in words. */
  rebuilt: z.string().optional(),
});

export type MachineManifest = z.infer<typeof ManifestSchema>;

/** The names of what this layer writes beside its target and renames into place (or away) a moment later. */
const TRANSIENT = [/^\..+\.[0-9a-f]{12}\.tmp$/, /^\.(new|gone)-/, /\.(rollback|old)-[0-9a-f]{12}$/, /^[0-9a-f]{64}\.[0-9a-f]{8}\.tmp$/];

/**
 * Whether `path`, from a machine's folder, is something being written or removed by this layer
 * (a temporary file, a checkpoint being made), which a copy of the folder leaves out. The
 * machine's own files (`files/`, `environment/`) are never such.
 */
export function isTransientPath(path: string): boolean {
  const parts = path.split(/[\\/]/);
  if (parts.length > 1 && parts[0] !== 'checkpoints') return false;
  return TRANSIENT.some((pattern) => pattern.test(parts.at(-1)!));
}

/** A machine folder whose manifest could not be read: its machine is rebuilt, never dropped. */
export interface DamagedManifest {
  name: string;
  /** Why it could not be read. */
  reason: string;
  /** The manifest's JSON when it parsed, for the fields that are still good. */
  parsed?: unknown;
}

const MANIFEST = 'machine.json';
const HISTORY = 'history.jsonl';
const SNAPSHOT = 'snapshot';
/** The names of deleted machines, in `machines/` (a dot name is no machine's folder). */
const RETIRED = '.retired-names.json';
const RETIRED_VERSION = 1;
/** Any version's names are read: a later format may add to this one, not take its list away. */
const RetiredNames = z.looseObject({ version: z.number(), names: z.array(z.string()) });

/**
 * The data dir's machines: `machines/<name>/` holds `machine.json` (written atomically),
 * `history.jsonl` (append-only), `snapshot` (the engine's swap file), `files/` (the default
 * working directory of python-engine machines) and `environment/` (a python machine's packages).
 */
export class MachineStore {
  readonly root: string;
  #retired?: Set<string>;
  #retiring: Promise<void> = Promise.resolve();

  constructor(readonly dataDir: string) {
    this.root = join(dataDir, 'machines');
  }

  async init(): Promise<void> {
    await mkdir(this.root, { recursive: true, mode: 0o700 });
  }

  dir(name: string): string {
    return join(this.root, name);
  }

  filesDir(name: string): string {
    return join(this.dir(name), 'files');
  }

  /** A python machine's own environment, where its packages go (a rollback leaves it as it is). */
  environmentDir(name: string): string {
    return join(this.dir(name), 'environment');
  }

  checkpointsDir(name: string): string {
    return join(this.dir(name), 'checkpoints');
  }

  snapshotPath(name: string): string {
    return join(this.dir(name), SNAPSHOT);
  }

  /** A fresh temporary path for a snapshot being written; `commitSnapshot` makes it current. */
  tempSnapshotPath(name: string): string {
    return tempPathFor(this.snapshotPath(name));
  }

  commitSnapshot(name: string, temp: string): Promise<void> {
    return commitFile(temp, this.snapshotPath(name));
  }

  async hasSnapshot(name: string): Promise<boolean> {
    return (await stat(this.snapshotPath(name)).catch(() => null))?.isFile() ?? false;
  }

  history(name: string): HistoryLog {
    return new HistoryLog(join(this.dir(name), HISTORY));
  }

  async create(manifest: MachineManifest): Promise<void> {
    await mkdir(this.filesDir(manifest.name), { recursive: true, mode: 0o700 });
    await this.save(manifest);
  }

  save(manifest: MachineManifest): Promise<void> {
    return writeFileAtomic(this.manifestPath(manifest.name), JSON.stringify(manifest, null, 1));
  }

  /**
   * Every machine on disk: its manifest, with `nextSeq` past the last instruction its history
   * holds (a server that stopped uncleanly may not have saved it), or why it cannot be read.
   * Read with blocking calls: this runs once, before anything is served, and with thousands of
   * machines a round trip to the thread pool per file is what would take long.
   */
  list(): { manifests: MachineManifest[]; damaged: DamagedManifest[]; newer: Array<{ name: string; reason: string }> } {
    const names = existsSync(this.root) ? readdirSync(this.root).filter((name) => !name.startsWith('.')) : [];
    const manifests: MachineManifest[] = [];
    const damaged: DamagedManifest[] = [];
    const newer = [];
    for (const name of names) {
      const entry = this.read(name);
      if ('manifest' in entry) manifests.push(entry.manifest);
      else if ('damaged' in entry) damaged.push(entry.damaged);
      else if ('newer' in entry) newer.push({ name, reason: entry.newer });
    }
    return { manifests, damaged, newer };
  }

  /** One machine's manifest (as `list` reads each), or why it cannot be read. */
  read(name: string): { manifest: MachineManifest } | { damaged: DamagedManifest } | { newer: string } | { absent: true } {
    let text: string | null;
    try {
      text = readFileSync(this.manifestPath(name), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return { damaged: { name, reason: (error as Error).message } };
      text = null;
    }
    const lastSeq = this.history(name).lastSeq();
    if (text === null) return existsSync(this.snapshotPath(name)) || lastSeq >= 0 ? { damaged: { name, reason: 'machine.json is missing' } } : { absent: true };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      return { damaged: { name, reason: `machine.json is not JSON (${(error as Error).message})` } };
    }
    const version = (parsed as { version?: unknown } | null)?.version;
    // Written by a newer Perennial in a format this one cannot read: left as it is, never rebuilt.
    if (typeof version === 'number' && version > MANIFEST_VERSION)
      return { newer: `its machine.json has format ${version}, and this Perennial reads format ${MANIFEST_VERSION}: update Perennial to use it` };
    const manifest = ManifestSchema.safeParse(parsed);
    if (!manifest.success)
      return { damaged: { name, reason: `machine.json is not a manifest (${z.prettifyError(manifest.error).replace(/\n/g, '; ')})`, parsed } };
    if (manifest.data.name !== name) return { damaged: { name, reason: `machine.json names another machine (${manifest.data.name})`, parsed } };
    manifest.data.nextSeq = Math.max(manifest.data.nextSeq, lastSeq + 1);
    return { manifest: manifest.data };
  }

  manifestPath(name: string): string {
    return join(this.dir(name), MANIFEST);
  }

  /** Renames a damaged file of a machine out of the way, keeping it; answers its new name. */
  async setAside(path: string): Promise<string | null> {
    const kept = `${path}.unreadable-${Date.now()}`;
    return rename(path, kept).then(
      () => kept,
      () => null,
    );
  }

  /** Moves a machine's folder out of the way, whole, under a name no machine has (a dot name); answers where, or null. */
  async setAsideMachine(name: string): Promise<string | null> {
    const kept = join(this.root, `.set-aside-${name}-${Date.now()}`);
    return rename(this.dir(name), kept).then(
      () => kept,
      () => null,
    );
  }

  /**
   * Removes a machine's folder, and keeps its name from new machines: an agent or a script may
   * still hold it, and must be told the machine is gone rather than reach another.
   */
  async remove(name: string): Promise<void> {
    this.#retiredNames().add(name);
    const write = () => writeFileAtomic(join(this.root, RETIRED), JSON.stringify({ version: RETIRED_VERSION, names: [...this.#retiredNames()] }));
    // Each write takes every name retired until it runs, so the last to run holds them all.
    this.#retiring = this.#retiring.then(write, write);
    await rm(this.dir(name), { recursive: true, force: true });
    await this.#retiring;
  }

  /** Whether a machine of `name` was deleted here (its name is retired). */
  wasDeleted(name: string): boolean {
    return this.#retiredNames().has(name);
  }

  /** Whether a machine here has or had `name`: a folder holds it, or a machine of that name was deleted. */
  isUsed(name: string): boolean {
    return this.wasDeleted(name) || existsSync(this.dir(name));
  }

  #retiredNames(): Set<string> {
    if (!this.#retired) {
      let names: string[] = [];
      try {
        const parsed = RetiredNames.safeParse(JSON.parse(readFileSync(join(this.root, RETIRED), 'utf8')));
        if (parsed.success) names = parsed.data.names;
      } catch {
        // None retired yet, or the file is damaged: its names only kept others from reuse.
      }
      this.#retired = new Set(names);
    }
    return this.#retired;
  }
}
