import { rm } from 'node:fs/promises';
import type { MachineManager } from '../machines/machine-manager.ts';
import { ManifestSchema } from '../machines/machine-store.ts';
import { ClusterUnavailableError, type ClusterDirectory, type MachineRow } from './directory.ts';
import type { Departures, HandOver } from './hand-over.ts';
import type { CommitHeld, MachineOwnership } from './machine-ownership.ts';
import type { Placement } from './machine-router.ts';
import { placeOn } from './placement.ts';
import type { StoredFolders } from './stored-folders.ts';

/** What a placer knows of its node: its id, whether its lease surely runs, whether it drains. */
export interface PlacingNode {
  readonly id: string;
  leaseHeld(): boolean;
  readonly handOver: HandOver;
}

/**
 * Where each request for a machine goes, for one node: its own machine stays while its lease
 * surely runs; a live node's goes there; one nobody runs goes to the node with the most room
 * (`placeOn`), or is taken over here, its folder read from the bucket. It also lets go of the
 * machines other nodes took while this node's lease had lapsed.
 */
export class MachinePlacer {
  /** Placements under way, one per machine, so that two requests do not both take it. */
  readonly #placing = new Map<string, Promise<Placement>>();

  constructor(
    private readonly manager: MachineManager,
    private readonly directory: ClusterDirectory,
    private readonly ownership: MachineOwnership,
    private readonly folders: StoredFolders,
    private readonly departures: Departures,
    private readonly node: PlacingNode,
  ) {}

  /**
   * Where a request for machine `name` goes. A machine the directory does not know is left to
   * this node, which answers that it does not exist.
   */
  async place(name: string, forwarded: boolean): Promise<Placement> {
    await this.departures.settled(name);
    if (this.manager.custody.has(name) && this.node.leaseHeld()) return { local: true };
    // One placement at a time per machine: a second would take it again from this node itself.
    let placing = this.#placing.get(name);
    if (!placing) {
      placing = this.#locate(name, forwarded).finally(() => this.#placing.delete(name));
      this.#placing.set(name, placing);
    }
    return placing;
  }

  /** Where a new machine is made: the node with the most room; here for a request another node sent, unless this one drains. */
  async placeNew(forwarded: boolean): Promise<Placement> {
    const target = await this.#elsewhere(forwarded);
    return target ? { local: false, url: target.url, leaseLeftMs: 0 } : { local: true };
  }

  /** After this node's lease lapsed: lets go of the machines other nodes took meanwhile. */
  async letGoOfTaken(): Promise<void> {
    for (const [name, generation] of this.ownership.owned()) {
      const row = await this.directory.locate(name);
      if (row && !row.deleted && row.owner === this.node.id && row.generation === generation) continue;
      await this.#taken(name, row);
    }
  }

  /** The node a machine no node runs goes to, or undefined for this one. */
  async #elsewhere(forwarded: boolean): Promise<{ url: string } | undefined> {
    return forwarded && !this.node.handOver.draining ? undefined : placeOn(await this.directory.live(), this.node.id);
  }

  /** Lets go of a machine another node took over while this node's lease had run out: what this node holds of it is stale. */
  async #taken(name: string, row: MachineRow | undefined): Promise<void> {
    this.ownership.forget(name);
    const now = row?.ownerUrl ? `node ${row.ownerUrl} took it over` : 'another node took it over';
    await this.manager.custody.detach(
      name,
      `This node's lease ran out while it was unreachable, and ${now}: what it did on machine ${name} since its last commit is not kept.`,
    );
  }

  async #locate(name: string, forwarded: boolean, attempts = 3): Promise<Placement> {
    const { custody } = this.manager;
    const row = await this.directory.locate(name);
    if (!row || row.deleted) return { local: true };
    if (row.owner === this.node.id && custody.has(name)) return { local: true };
    if (row.owner !== this.node.id && custody.has(name)) await this.#taken(name, row);
    if (row.owner !== null && row.owner !== this.node.id && row.ownerLive && row.ownerUrl)
      return { local: false, url: row.ownerUrl, leaseLeftMs: row.ownerLeaseLeftMs };
    // No node runs it: the node with the most room takes it (one another node sent here, this one, unless it drains).
    const target = await this.#elsewhere(forwarded);
    if (target) return { local: false, url: target.url, leaseLeftMs: 0 };
    const taken = await this.directory.take(name, this.node.id);
    // Another node took it first: it is that node's now.
    if (!taken && attempts > 1) return this.#locate(name, forwarded, attempts - 1);
    if (!taken) throw new ClusterUnavailableError(`Machine ${name} changes hands too often to be placed; try again`);
    await custody.detach(name);
    this.ownership.took(name, taken.generation, await this.#bringHere(taken.before));
    const { before } = taken;
    // Its node stopped without letting it go: what it gave out after its last commit is lost.
    const unclean =
      before.owner !== null && before.owner !== this.node.id
        ? {
            stopped: `The node that ran this machine (${before.ownerUrl ?? `node ${before.owner}`}) stopped unexpectedly.`,
            given: { from: (before.commit?.seq ?? -1) + 1, to: before.nextSeq - 1 },
          }
        : undefined;
    await custody.attach(name, unclean);
    return { local: true };
  }

  /** Makes the data dir's folder of the machine its last commit (or, never committed, a new machine's); answers the commit read. */
  async #bringHere(row: MachineRow): Promise<CommitHeld | undefined> {
    const { store } = this.manager.custody;
    const folder = store.dir(row.name);
    const { commit } = row;
    if (commit) {
      const { objects } = await this.folders.materialize(commit.tree, commit.home, folder);
      return { home: commit.home, tree: commit.tree, objects };
    }
    // Made on a node that stopped before its first commit: what the cache holds of it is older.
    await rm(folder, { recursive: true, force: true });
    await store.create({ ...ManifestSchema.parse(row.manifest), nextSeq: row.nextSeq });
    return undefined;
  }
}
