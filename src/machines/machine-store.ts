import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { EngineName, SnapshotInfo } from '../shared/types.ts';
import { commitFile, tempPathFor, writeFileAtomic } from './atomic-file.ts';
import { HistoryLog } from './history-log.ts';

/** What is kept on disk about a machine, besides its history and snapshot. */
export interface MachineManifest {
  version: 1;
  name: string;
  createdAt: string;
  tags: Record<string, string>;
  engine: EngineName;
  memoryMb: number;
  /** python engine: the interpreter chosen at creation; empty means the default at each start. */
  python?: string;
  /** sandbox engine: the host folder mounted at /workspace. */
  workspace?: { hostPath: string; writable: boolean };
  /** sandbox engine: network allowed. */
  network?: boolean;
  nextSeq: number;
  lastUsedAt: string;
  snapshot: SnapshotInfo | null;
}

const MANIFEST = 'machine.json';
const HISTORY = 'history.jsonl';
const SNAPSHOT = 'snapshot';

/**
 * The data dir's machines: `machines/<name>/` holds `machine.json` (written atomically),
 * `history.jsonl` (append-only), `snapshot` (the engine's swap file) and `files/` (the default
 * working directory of python-engine machines).
 */
export class MachineStore {
  readonly root: string;

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
    return writeFileAtomic(join(this.dir(manifest.name), MANIFEST), JSON.stringify(manifest, null, 1));
  }

  /** Every readable manifest; unreadable ones are reported, never deleted. */
  async list(onUnreadable: (name: string, error: unknown) => void): Promise<MachineManifest[]> {
    const names = await readdir(this.root).catch(() => [] as string[]);
    const manifests: MachineManifest[] = [];
    for (const name of names) {
      if (name.startsWith('.')) continue;
      try {
        const manifest = JSON.parse(await readFile(join(this.root, name, MANIFEST), 'utf8')) as MachineManifest;
        if (manifest.name !== name) throw new Error(`manifest names ${manifest.name}`);
        manifests.push(manifest);
      } catch (error) {
        onUnreadable(name, error);
      }
    }
    return manifests;
  }

  async remove(name: string): Promise<void> {
    await rm(this.dir(name), { recursive: true, force: true });
  }
}
