import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { BaseImageShelf } from '../engines/base-image-shelf.ts';
import type { ClusterDirectory } from './directory.ts';
import type { ObjectStore } from './object-store.ts';

/**
 * Sandbox base images kept in the cluster's bucket (`bases/<key>.image`, written once): a node
 * that needs a base reads the bucket's, or, first to need it, makes it and puts it there, under a
 * lock of the directory's, so that two nodes never make two bases of one id. Beside the local
 * copy, a note of the size and time of the file that came from (or went to) the bucket: a copy
 * that still matches it is not read again.
 */
export class SharedBaseImages implements BaseImageShelf {
  constructor(
    private readonly directory: ClusterDirectory,
    private readonly store: ObjectStore,
  ) {}

  provide<T>(key: string, path: string, ensure: () => Promise<T>): Promise<T> {
    return this.directory.withLock(`perennial-base:${key}`, async () => {
      const object = `bases/${key}.image`;
      const shelved = await this.store.has(object);
      if (shelved && !(await this.#matchesNote(path))) {
        await mkdir(dirname(path), { recursive: true, mode: 0o700 });
        await this.store.download(object, path);
        await this.#note(path);
      }
      const result = await ensure();
      if (!shelved) {
        await this.store.put(object, await readFile(path));
        await this.#note(path);
      }
      return result;
    });
  }

  async #matchesNote(path: string): Promise<boolean> {
    const [note, stats] = await Promise.all([readFile(`${path}.shelved`, 'utf8').catch(() => ''), stat(path).catch(() => null)]);
    return stats !== null && note === stamp(stats);
  }

  async #note(path: string): Promise<void> {
    await writeFile(`${path}.shelved`, stamp(await stat(path)));
  }
}

function stamp(stats: { size: number; mtimeMs: number }): string {
  return `${stats.size} ${stats.mtimeMs}`;
}
