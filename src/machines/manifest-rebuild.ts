import { engineDescriptor, ENGINES } from '../engines/descriptors.ts';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { EngineName } from '../shared/requests.ts';
import { ManifestSchema, type DamagedManifest, type MachineManifest, type MachineStore } from './machine-store.ts';

/** What a rebuild takes when nothing on disk says it: the engine (its descriptor has the memory cap). */
export interface RebuildDefaults {
  engine: EngineName;
}

/** Fields of a damaged manifest worth keeping when they still read; the rest comes from the disk. */
const SALVAGED = ['createdAt', 'tags', 'engine', 'memoryMb', 'python', 'workspace', 'workdir', 'network', 'lastUsedAt'] as const;

/**
 * Rebuilds the manifest of a machine whose `machine.json` is damaged or missing, from what is
 * left: the folder's name, the snapshot (its engine, time and size), the history (seqs and
 * times), and the fields of the damaged file that still read. The damaged file is kept aside,
 * never deleted, and the manifest says in `rebuilt` what happened and what was reset.
 */
export async function rebuildManifest(store: MachineStore, damaged: DamagedManifest, defaults: RebuildDefaults): Promise<MachineManifest> {
  const { name } = damaged;
  const keptAs = await store.setAside(store.manifestPath(name));
  const kept = salvage(damaged.parsed);
  const history = await store.history(name).read();
  const snapshotFile = await stat(store.snapshotPath(name)).catch(() => null);
  const snapshotEngine = snapshotFile ? await engineOfSnapshot(store.snapshotPath(name)) : undefined;
  const engine = snapshotEngine ?? kept.engine ?? defaults.engine;
  const firstUse = history[0]?.startedAt ?? snapshotFile?.mtime.toISOString() ?? new Date().toISOString();
  const reset = [
    ...(snapshotEngine || kept.engine ? [] : [`engine (${engine})`]),
    ...(kept.tags ? [] : ['tags']),
    ...(kept.memoryMb ? [] : ['memory cap']),
    ...(damaged.parsed === undefined ? ['interpreter, folder and network options'] : []),
  ];
  const manifest: MachineManifest = {
    version: 1,
    name,
    createdAt: kept.createdAt ?? firstUse,
    tags: kept.tags ?? {},
    engine,
    memoryMb: kept.memoryMb ?? engineDescriptor(engine).defaultMemoryMb,
    ...(kept.python ? { python: kept.python } : {}),
    ...(kept.workspace ? { workspace: kept.workspace } : {}),
    ...(kept.workdir ? { workdir: kept.workdir } : {}),
    ...(kept.network ? { network: kept.network } : {}),
    nextSeq: (history.at(-1)?.seq ?? -1) + 1,
    lastUsedAt: history.at(-1)?.startedAt ?? kept.lastUsedAt ?? firstUse,
    // A snapshot is taken between instructions: it holds every one that started before it.
    snapshot: snapshotFile
      ? {
          at: snapshotFile.mtime.toISOString(),
          bytes: snapshotFile.size,
          seq: (history.filter((e) => Date.parse(e.startedAt) <= snapshotFile.mtimeMs).at(-1)?.seq ?? -1) + 1,
        }
      : null,
    rebuilt: [
      `This machine's manifest could not be read (${damaged.reason}), so it was rebuilt from its ${snapshotFile ? 'snapshot and ' : ''}history on ${new Date().toISOString()}`,
      keptAs ? `; the damaged file is kept as ${basename(keptAs)}` : '',
      reset.length ? `. Reset to defaults: ${reset.join(', ')}.` : '.',
    ].join(''),
  };
  await store.save(manifest);
  return manifest;
}

/** Each salvaged field of `parsed` that still passes its schema. */
function salvage(parsed: unknown): Partial<Pick<MachineManifest, (typeof SALVAGED)[number]>> {
  if (typeof parsed !== 'object' || parsed === null) return {};
  const record = parsed as Record<string, unknown>;
  const kept: Record<string, unknown> = {};
  for (const field of SALVAGED) {
    const value = ManifestSchema.shape[field].safeParse(record[field]);
    if (value.success && value.data !== undefined) kept[field] = value.data;
  }
  return kept;
}

async function engineOfSnapshot(path: string): Promise<EngineName | undefined> {
  const file = await open(path, 'r').catch(() => null);
  if (!file) return undefined;
  try {
    const head = new Uint8Array(32);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    const text = new TextDecoder().decode(head.subarray(0, bytesRead));
    return ENGINES.find((engine) => text.startsWith(engine.snapshotMagic))?.name;
  } finally {
    await file.close();
  }
}
