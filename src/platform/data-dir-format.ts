import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { writeFileAtomic } from './atomic-file.ts';
import { CodedError } from './coded-error.ts';

/**
 * The data dir's format. It goes up only when a change would be misread by the builds before it
 * (then the change's migration runs, and this build refuses a data dir of a higher format); a
 * field that older readers may ignore does not change it. A data dir without the file is format 1,
 * as every build before 0.2.0 wrote it.
 */
export const DATA_DIR_FORMAT = 1;

const FORMAT_FILE = 'data-dir.json';

/** `data-dir.json`; fields a later build adds are kept when this one writes it. */
const DataDirRecord = z.looseObject({
  format: z.number().int().positive(),
  /** The version of the last Perennial that opened the data dir. */
  writtenBy: z.string(),
});

/** The data dir was written in a format newer than this build reads; it was left as it was. */
export class NewerDataDirError extends CodedError {
  static override readonly errorCode = 'DataDirTooNew';
  constructor(dataDir: string, found: { format: number; writtenBy: string }, ownVersion: string) {
    super(
      `The data dir ${dataDir} was written by Perennial ${found.writtenBy} in data format ${found.format}, which this Perennial (${ownVersion}) cannot read ` +
        `(it reads format ${DATA_DIR_FORMAT}); update Perennial, or give this one another data dir (--data-dir or PERENNIAL_HOME). Nothing was changed.`,
    );
  }
}

async function readRecord(dataDir: string): Promise<z.infer<typeof DataDirRecord> | null> {
  let text: string;
  try {
    text = await readFile(join(dataDir, FORMAT_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let parsed;
  try {
    parsed = DataDirRecord.safeParse(JSON.parse(text));
  } catch {
    parsed = null;
  }
  // Written atomically, so damage is the disk's: without its format the data dir is not touched.
  if (!parsed?.success)
    throw new Error(
      `${join(dataDir, FORMAT_FILE)} is damaged, so the data dir's format is unknown; nothing was changed (remove the file to have it written again)`,
    );
  return parsed.data;
}

/** Refuses, before anything is written, a data dir that a newer Perennial made unreadable for this one. */
export async function checkDataDirFormat(dataDir: string, ownVersion: string): Promise<void> {
  const record = await readRecord(dataDir);
  if (record && record.format > DATA_DIR_FORMAT) throw new NewerDataDirError(dataDir, record, ownVersion);
}

/** Records that this build (`ownVersion`) uses the data dir, in this build's format. */
export async function markDataDir(dataDir: string, ownVersion: string): Promise<void> {
  const record = await readRecord(dataDir);
  if (record?.format === DATA_DIR_FORMAT && record.writtenBy === ownVersion) return;
  await writeFileAtomic(join(dataDir, FORMAT_FILE), JSON.stringify({ ...record, format: DATA_DIR_FORMAT, writtenBy: ownVersion }, null, 1) + '\n');
}
