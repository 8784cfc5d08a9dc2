import type { StoredFolders } from './stored-folders.ts';

/** Where a machine's objects are kept in the bucket. */
function machinePrefix(name: string): string {
  return `machines/${encodeURIComponent(name)}/`;
}

/** Where one generation of a machine's owners keeps its objects: written by its owner alone. */
export function homeOf(name: string, generation: number): string {
  return `${machinePrefix(name)}g${generation}`;
}

/**
 * What the bucket keeps of each machine this node owns: what its last commit needs, and no more.
 * After a commit its owner removes what the commit before needed and this one does not (only it
 * writes that generation's home); after a takeover, or a commit that was sent but not recorded,
 * every other object of the machine goes at its next commit (a sweep); a deleted machine's go
 * with it. A removal that fails is left for the next sweep.
 */
export class BucketCleanup {
  /** Machines whose objects beyond their last commit's go at their next commit. */
  readonly #sweeps = new Set<string>();

  constructor(private readonly folders: StoredFolders) {}

  /** The machine's objects no commit of it names go at its next commit. */
  sweepLater(name: string): void {
    this.#sweeps.add(name);
  }

  /** After a commit recorded at `home`, needing `kept`: removes what only `previous` needed, or sweeps. */
  async committed(name: string, home: string, kept: Set<string>, previous?: { home: string; objects: Set<string> }): Promise<void> {
    try {
      if (this.#sweeps.has(name) || (previous && previous.home !== home)) {
        await this.folders.sweep(machinePrefix(name), home, kept);
        this.#sweeps.delete(name);
      } else if (previous)
        await this.folders.remove(
          home,
          [...previous.objects].filter((hash) => !kept.has(hash)),
        );
    } catch {
      this.#sweeps.add(name);
    }
  }

  /** A deleted machine: nothing names its objects any more. */
  async retired(name: string): Promise<void> {
    this.#sweeps.delete(name);
    await this.folders.sweep(machinePrefix(name)).catch(() => {});
  }
}
