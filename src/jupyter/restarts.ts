import { readFile, rm } from 'node:fs/promises';
import { z } from 'zod';
import { writeFileAtomic } from '../platform/atomic-file.ts';
import type { PerennialClient } from '../shared/perennial-client.ts';

/** What a kernel asked to restart leaves for the kernel Jupyter starts after it. */
const RestartAsked = z.looseObject({ version: z.literal(1), machine: z.string(), at: z.string() });

/**
 * A restart as a person means it: a clean namespace, with the state before kept as a checkpoint
 * to roll back to. The kernel asked to restart only says so, in a file beside the connection
 * file, which Jupyter starts the next kernel with, and exits at once (Jupyter kills a kernel
 * that takes long); the next kernel takes the checkpoint and clears the namespace before it
 * answers anything, and its first output names the checkpoint. A kernel that died without
 * being asked leaves no such file: the next one finds the machine as it was.
 */
export class Restarts {
  constructor(private readonly file: string) {}

  /** Beside `connectionFile`: a name Jupyter's own clean-up of `kernel-*.json` files leaves alone. */
  static beside(connectionFile: string): Restarts {
    return new Restarts(`${connectionFile.replace(/\.json$/, '')}.perennial-restart`);
  }

  async asked(machine: string): Promise<void> {
    await writeFileAtomic(this.file, JSON.stringify({ version: 1, machine, at: new Date().toISOString() }));
  }

  /** Carries out a restart asked of the kernel before this one: the lines its first output says. */
  async finish(client: PerennialClient, machine: string): Promise<string[]> {
    const asked = await this.#read();
    if (!asked || asked.machine !== machine) return [];
    const label = `before restart ${asked.at.slice(0, 19).replace('T', ' ')}`;
    const checkpoint = await client.checkpoint(machine, label);
    const { cleared } = await client.reset(machine);
    await rm(this.file, { force: true });
    return [
      `Restarted: a clean namespace (${cleared} name${cleared === 1 ? '' : 's'} cleared; files and packages stay). ` +
        `The state before is checkpoint ${checkpoint.id} ("${label}"): perennial rollback ${machine} ${checkpoint.id} brings it back.`,
    ];
  }

  async #read(): Promise<z.infer<typeof RestartAsked> | null> {
    const text = await readFile(this.file, 'utf8').catch(() => null);
    if (text === null) return null;
    try {
      return RestartAsked.parse(JSON.parse(text));
    } catch {
      // Not one this build can read (a later build's): nothing to carry out, and nothing to lose by leaving it.
      return null;
    }
  }
}
