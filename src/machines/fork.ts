import { existsSync } from 'node:fs';
import { cp, stat } from 'node:fs/promises';
import { linkOrCopy } from '../platform/file-links.ts';
import { PhaseClock } from '../platform/phase-timings.ts';
import type { CheckpointSource } from './checkpoint-store.ts';
import type { MachineManifest, MachineStore } from './machine-store.ts';

/**
 * Makes the machine `manifest` in `store` from another machine's saved state: its snapshot is
 * hard-linked where the file system allows (the origin only ever replaces its file, by rename, so
 * the two share nothing after) and its own files and packages are copied. When any step fails, nothing of the new machine is left.
 */
export async function createFork(store: MachineStore, manifest: MachineManifest, origin: string, source: CheckpointSource): Promise<void> {
  const clock = new PhaseClock();
  try {
    await store.create(manifest);
    if (source.snapshotPath) {
      await linkOrCopy(source.snapshotPath, store.snapshotPath(manifest.name));
      manifest.snapshot = { at: manifest.createdAt, seq: 0, bytes: (await stat(source.snapshotPath)).size };
    }
    clock.lap('fork: machine made, snapshot linked');
    if (source.filesDir) await cp(source.filesDir, store.filesDir(manifest.name), { recursive: true, verbatimSymlinks: true });
    // A python machine's packages go with it.
    if (existsSync(store.environmentDir(origin)))
      await cp(store.environmentDir(origin), store.environmentDir(manifest.name), { recursive: true, verbatimSymlinks: true });
    clock.lap('fork: files and environment copied');
    await store.save(manifest);
    clock.lap('fork: manifest written');
  } catch (error) {
    await store.remove(manifest.name);
    throw error;
  }
}
