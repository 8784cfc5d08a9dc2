import { CodedError } from '../platform/coded-error.ts';
import { isTransientPath, type MachineManifest } from '../machines/machine-store.ts';
import { BucketCleanup, homeOf } from './bucket-cleanup.ts';
import type { ClusterDirectory } from './directory.ts';
import type { StoredFolders } from './stored-folders.ts';

/**
 * A request for a machine this node is handing over: answered as `MachineMoved`, so that it is
 * placed again and runs where the machine went; not a MachineMovedError, which would make the
 * manager let the machine go at once, in the middle of the hand-over that is saving it.
 */
class MachineLeavingError extends CodedError {
  static override readonly errorCode = 'MachineMoved';
}

/** A machine's last commit, as this node made or read it: its home in the bucket, its tree, the objects the tree needs. */
export interface CommitHeld {
  home: string;
  tree: string;
  objects: Set<string>;
}

/**
 * The machines a node owns, each with the generation it took it in: the part of a node that is
 * its manager's `MachineHome`. Every write for a machine (an instruction number, a commit, a
 * deletion, a release) carries that generation, so a node that lost the machine meanwhile is
 * refused (`MachineMovedError`). A commit sends the machine's folder to the bucket, in its
 * generation's home, then records it in the directory.
 */
export class MachineOwnership {
  /** The machines this node owns: the generation it took each in. */
  readonly #owned = new Map<string, number>();
  readonly #commits = new Map<string, CommitHeld>();
  /** The machines whose last commit holds every instruction given out: let go when the node leaves. */
  readonly #whole = new Set<string>();
  /** Per machine, the reservations in the order asked, so instructions keep the order they were sent in. */
  readonly #admissions = new Map<string, Promise<unknown>>();
  readonly #cleanup: BucketCleanup;

  /** `node`: this node's id and (once it has joined) URL; `leaving`: whether a machine is being handed to another node. */
  constructor(
    private readonly directory: ClusterDirectory,
    private readonly folders: StoredFolders,
    private readonly node: { id: string; url(): string },
    private readonly leaving: (name: string) => boolean,
  ) {
    this.#cleanup = new BucketCleanup(folders);
  }

  /** The machines owned, with their generations. */
  owned(): Array<[string, number]> {
    return [...this.#owned];
  }

  /** The machines whose last commit holds all they ran. */
  whole(): string[] {
    return [...this.#owned.keys()].filter((name) => this.#whole.has(name));
  }

  isWhole(name: string): boolean {
    return this.#whole.has(name);
  }

  /** A machine taken over in `generation`, with its last commit as read (none: it was never committed); the older generations' objects go at its first commit here. */
  took(name: string, generation: number, commit: CommitHeld | undefined): void {
    this.#owned.set(name, generation);
    if (commit) this.#commits.set(name, commit);
    else this.#commits.delete(name);
    this.#cleanup.sweepLater(name);
  }

  /** The machine is no longer this node's (another took it, or it was handed over). */
  forget(name: string): void {
    this.#owned.delete(name);
    this.#commits.delete(name);
    this.#whole.delete(name);
  }

  /** Lets go of the machine, its last commit whole, for the next node asked to take it at once. */
  async release(name: string): Promise<void> {
    const generation = this.#generation(name);
    this.forget(name);
    await this.directory.release(name, this.node.id, generation);
  }

  isUsed(name: string): Promise<boolean> {
    return this.directory.isUsed(name);
  }

  async claim(manifest: MachineManifest): Promise<boolean> {
    const claimed = await this.directory.claim(manifest.name, this.node.id, manifest);
    if (claimed) this.#owned.set(manifest.name, 1);
    return claimed;
  }

  reserve(name: string): Promise<void> {
    // Going to another node: the request is placed again once it has gone, and runs there.
    if (this.leaving(name)) return Promise.reject(new MachineLeavingError(`Machine ${name} is moving to another node`));
    const previous = this.#admissions.get(name) ?? Promise.resolve();
    const reserved = previous.catch(() => {}).then(() => this.directory.reserve(name, this.node.id, this.#generation(name)));
    this.#admissions.set(name, reserved);
    void reserved.finally(() => this.#admissions.get(name) === reserved && this.#admissions.delete(name)).catch(() => {});
    return reserved;
  }

  /**
   * Sends the machine's folder to its home for this generation (`machines/<name>/g<generation>`,
   * where no other node writes), records it in the directory as this generation's owner, then
   * lets the bucket's clean-up remove what no commit needs any more.
   */
  async commit(manifest: MachineManifest, folder: string): Promise<void> {
    const { name } = manifest;
    const generation = this.#generation(name);
    const home = homeOf(name, generation);
    this.#whole.delete(name);
    const committed = await this.folders.commit(folder, home, isTransientPath);
    const seq = manifest.snapshot ? manifest.snapshot.seq - 1 : -1;
    const previous = this.#commits.get(name);
    if (previous?.home !== home || previous.tree !== committed.tree) {
      const at = new Date().toISOString();
      const commit = { tree: committed.tree, home, seq, at, bytes: committed.bytes, node: this.node.url() };
      // Refused or not recorded: what this commit sent is no commit's, and goes at the next sweep.
      await this.directory.commit(name, this.node.id, generation, commit, manifest).catch((error: unknown) => {
        this.#cleanup.sweepLater(name);
        throw error;
      });
      this.#commits.set(name, { home, tree: committed.tree, objects: committed.objects });
      await this.#cleanup.committed(name, home, committed.objects, previous);
    }
    if (seq >= manifest.nextSeq - 1) this.#whole.add(name);
  }

  async retire(name: string): Promise<void> {
    await this.directory.retire(name, this.node.id, this.#generation(name));
    this.forget(name);
    await this.#cleanup.retired(name);
  }

  #generation(name: string): number {
    // A machine this node never took has no generation of its own: 0 matches no row, so the write is refused.
    return this.#owned.get(name) ?? 0;
  }
}
