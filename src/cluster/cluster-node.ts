import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import type { MachineHome } from '../machines/machine-home.ts';
import type { MachineManager } from '../machines/machine-manager.ts';
import { ManifestSchema, type MachineManifest } from '../machines/machine-store.ts';
import { VERSION } from '../shared/version.ts';
import { markNodeCache } from '../platform/node-cache.ts';
import { ClusterDirectory, ClusterUnavailableError, type MachineRow } from './directory.ts';
import { ObjectStore } from './object-store.ts';
import type { ClusterSettings } from './cluster-settings.ts';
import { StoredFolders } from './stored-folders.ts';
import { SharedBaseImages } from './shared-base-images.ts';
import { ClusterClient } from './cluster-client.ts';
import { MachineRouter, type Placement } from './machine-router.ts';
import { hasRoom, placeOn } from './placement.ts';
import { NodeLease } from './node-lease.ts';
import { MachineOwnership, type CommitHeld } from './machine-ownership.ts';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { ClusterStatus, MachineEvent, MachineInfo } from '../shared/types.ts';
import { manifestInfo } from '../machines/machine.ts';
import { toMachineEvent } from '../machines/manager-options.ts';
import { NodeEvents } from './node-events.ts';
import { HttpClient } from '../client/http-client.ts';
import { onBehalfOf, type Principal } from '../team/principal.ts';
import type { TeamStore } from '../team/team-store.ts';
import type { AuditLog } from '../team/audit-log.ts';
import { ClusterAuditLog, ClusterTeamStore } from './cluster-team.ts';

/** How many idle machines a node short of room hands over at each renewal: a few at a time, so that the load it sends is measured before more follows. */
const HANDED_OVER_PER_RENEWAL = 2;

/** How long a listing waits for another node's own listing before it gives that node's machines as their last commit has them. */
const PEER_LISTING_MS = 3000;

/**
 * This process as a node of a cluster, and the coordinator of its parts: its lease
 * (`NodeLease`); the machines it owns, which are its manager's home (`MachineOwnership`, with
 * the bucket's clean-up); where each request for a machine goes (`place`, through the
 * `router`), taking a machine over when no live node runs it, or sending it to the node with the
 * most room; machines handed to other nodes (`handOver`, `drain`); and what its clients hear of
 * the other nodes (listings, status, events).
 */
export class ClusterNode implements MachineHome {
  readonly ownsDataDir = false;
  readonly id = randomUUID();
  #url = '';
  readonly #folders: StoredFolders;
  /** The sandbox's base images, which every node reads from the bucket. */
  readonly baseImages: SharedBaseImages;
  readonly #lease: NodeLease;
  readonly #ownership: MachineOwnership;
  /** Placements under way, one per machine, so that two requests do not both take it. */
  readonly #placing = new Map<string, Promise<Placement>>();
  /** Machines being handed to other nodes: requests for them wait, then go where they went. */
  readonly #leaving = new Map<string, Promise<void>>();
  /** Set once the node drains: it hands every machine over, and none is placed on it. */
  #draining = false;
  #rebalancing = false;
  #manager?: MachineManager;
  /** Clients of the other nodes' HTTP APIs, with the cluster's token, by URL. */
  readonly #peers = new Map<string, HttpClient>();
  #token = '';
  /** The changes to the other nodes' machines, heard once the node has joined. */
  readonly #events: NodeEvents;
  /** Where each request for a machine goes: a node that cannot be reached is waited out for its lease and a margin. */
  readonly router: MachineRouter;

  private constructor(
    readonly settings: ClusterSettings,
    readonly directory: ClusterDirectory,
    readonly store: ObjectStore,
  ) {
    this.#folders = new StoredFolders(store);
    this.baseImages = new SharedBaseImages(directory, store);
    this.#lease = new NodeLease(directory, this.id, settings.leaseSeconds);
    this.#ownership = new MachineOwnership(directory, this.#folders, { id: this.id, url: () => this.#url }, (name) => this.#leaving.has(name));
    this.router = new MachineRouter(
      (name, forwarded) => (name === null ? this.#placeNew(forwarded) : this.place(name, forwarded)),
      (settings.leaseSeconds + 5) * 1000,
    );
    this.#events = new NodeEvents(directory, this.id, (url) => this.#peer(url));
  }

  /** Reaches the directory and the bucket (a clear error when either cannot be), before anything is served. */
  static async open(settings: ClusterSettings): Promise<ClusterNode> {
    const store = new ObjectStore(settings.store);
    const directory = await ClusterDirectory.open(settings.database, settings.leaseSeconds);
    try {
      await store.check();
    } catch (error) {
      await directory.close();
      store.close();
      throw error;
    }
    return new ClusterNode(settings, directory, store);
  }

  /** The token every node accepts: the first node's `proposed` one. */
  async token(proposed: string): Promise<string> {
    this.#token = await this.directory.setting('token', proposed);
    return this.#token;
  }

  /** A client of the node at `url`. */
  #peer(url: string): HttpClient {
    let peer = this.#peers.get(url);
    if (!peer) {
      peer = new HttpClient({ baseUrl: url, token: this.#token });
      this.#peers.set(url, peer);
    }
    return peer;
  }

  /**
   * Enters the cluster at `url` (where other nodes reach this one; the node listens on `host`
   * and `port`), serving `manager`'s machines, and brings in the machines its data dir holds that
   * the cluster never had (a computer's own, from before it was a node). From then on the data
   * dir is this cluster's cache, and says so to every command that would serve it.
   */
  async join(url: string, manager: MachineManager, listening: { host: string; port: number }): Promise<void> {
    this.#url = url;
    this.#manager = manager;
    this.#events.start(url);
    manager.on('event', (event) => this.#events.announce(toMachineEvent(event)));
    const { database, store, leaseSeconds, advertiseUrl } = this.settings;
    await markNodeCache(manager.dataDir, {
      cluster: { database, store: store.url, storeEndpoint: store.endpoint, storeRegion: store.region, leaseSeconds, advertiseUrl },
      ...listening,
      url,
    });
    await this.#lease.enter(url, VERSION, {
      room: () => manager.room(),
      lapsed: () => this.#letGoOfTaken(),
      renewed: () => this.#rebalanceSoon(),
    });
    await this.#bringIn(manager);
  }

  async #bringIn(manager: MachineManager): Promise<void> {
    const { manifests } = manager.store.list();
    const known = await this.directory.madeAt(manifests.map((manifest) => manifest.name));
    for (const manifest of manifests) {
      const { name } = manifest;
      if (known.has(name)) {
        // This node's cache of the cluster's machine; or another machine of that name, kept aside, whole.
        if (known.get(name) !== manifest.createdAt) {
          const kept = await manager.store.setAsideMachine(name);
          const where = kept ? `its folder is kept, whole, at ${kept}` : 'its folder could not be moved aside';
          manager.tell(name, `Machine ${name} of this data dir is not served: the cluster has another machine by that name; ${where}.`);
        }
        continue;
      }
      if (!(await this.claim(manifest))) continue;
      await manager.attach(name, {});
      await manager.save(name);
    }
  }

  get url(): string {
    return this.#url;
  }

  /** Whether this node's lease surely runs. */
  get leaseHeld(): boolean {
    return this.#lease.held;
  }

  /** A node short of room hands machines over after a renewal, one round at a time. */
  #rebalanceSoon(): void {
    if (this.#rebalancing) return;
    this.#rebalancing = true;
    // The directory down: the next renewal tries again.
    void this.#rebalance()
      .catch(() => {})
      .finally(() => (this.#rebalancing = false));
  }

  /** After its lease lapsed: lets go of the machines other nodes took meanwhile. */
  async #letGoOfTaken(): Promise<void> {
    for (const [name, generation] of this.#ownership.owned()) {
      const row = await this.directory.locate(name);
      if (row && !row.deleted && row.owner === this.id && row.generation === generation) continue;
      await this.#taken(name, row);
    }
  }

  /** Lets go of a machine another node took over while this node's lease had run out: what this node holds of it is stale. */
  async #taken(name: string, row: MachineRow | undefined): Promise<void> {
    this.#ownership.forget(name);
    const now = row?.ownerUrl ? `node ${row.ownerUrl} took it over` : 'another node took it over';
    await this.#manager?.detach(
      name,
      `This node's lease ran out while it was unreachable, and ${now}: what it did on machine ${name} since its last commit is not kept.`,
    );
  }

  /**
   * Where a request for machine `name` goes. This node's own machine stays here while its lease
   * surely runs; else the directory says: a live node's machine goes there; one nobody runs is
   * taken over, its folder read from the bucket. A machine the directory does not know is left
   * to this node, which answers that it does not exist.
   */
  async place(name: string, forwarded = false): Promise<Placement> {
    await this.#leaving.get(name);
    if (this.#manager?.has(name) && this.leaseHeld) return { local: true };
    // One placement at a time per machine: a second would take it again from this node itself.
    let placing = this.#placing.get(name);
    if (!placing) {
      placing = this.#locate(name, forwarded).finally(() => this.#placing.delete(name));
      this.#placing.set(name, placing);
    }
    return placing;
  }

  /** Where a new machine is made: the node with the most room (`placeOn`); here for a request another node sent, unless this one drains. */
  async #placeNew(forwarded: boolean): Promise<Placement> {
    const target = forwarded && !this.#draining ? undefined : placeOn(await this.directory.live(), this.id);
    return target ? { local: false, url: target.url, leaseLeftMs: 0 } : { local: true };
  }

  async #locate(name: string, forwarded: boolean, attempts = 3): Promise<Placement> {
    const manager = this.#manager!;
    const row = await this.directory.locate(name);
    if (!row || row.deleted) return { local: true };
    if (row.owner === this.id && manager.has(name)) return { local: true };
    if (row.owner !== this.id && manager.has(name)) await this.#taken(name, row);
    if (row.owner !== null && row.owner !== this.id && row.ownerLive && row.ownerUrl)
      return { local: false, url: row.ownerUrl, leaseLeftMs: row.ownerLeaseLeftMs };
    // No node runs it: the node with the most room takes it (one another node sent here, this one, unless it drains).
    const target = forwarded && !this.#draining ? undefined : placeOn(await this.directory.live(), this.id);
    if (target) return { local: false, url: target.url, leaseLeftMs: 0 };
    const taken = await this.directory.take(name, this.id);
    // Another node took it first: it is that node's now.
    if (!taken && attempts > 1) return this.#locate(name, forwarded, attempts - 1);
    if (!taken) throw new ClusterUnavailableError(`Machine ${name} changes hands too often to be placed; try again`);
    await manager.detach(name);
    this.#ownership.took(name, taken.generation, await this.#bringHere(manager, taken.before));
    const { before } = taken;
    // Its node stopped without letting it go: what it gave out after its last commit is lost.
    const unclean =
      before.owner !== null && before.owner !== this.id
        ? {
            stopped: `The node that ran this machine (${before.ownerUrl ?? `node ${before.owner}`}) stopped unexpectedly.`,
            given: { from: (before.commit?.seq ?? -1) + 1, to: before.nextSeq - 1 },
          }
        : undefined;
    await manager.attach(name, unclean);
    return { local: true };
  }

  /** Makes the data dir's folder of the machine its last commit (or, never committed, a new machine's); answers the commit read. */
  async #bringHere(manager: MachineManager, row: MachineRow): Promise<CommitHeld | undefined> {
    const folder = manager.store.dir(row.name);
    const { commit } = row;
    if (commit) {
      const { objects } = await this.#folders.materialize(commit.tree, commit.home, folder);
      return { home: commit.home, tree: commit.tree, objects };
    }
    // Made on a node that stopped before its first commit: what the cache holds of it is older.
    await rm(folder, { recursive: true, force: true });
    await manager.store.create({ ...ManifestSchema.parse(row.manifest), nextSeq: row.nextSeq });
    return undefined;
  }

  /**
   * The node's machines as its own MCP endpoints reach them for `principal`: `local`'s here, the
   * others through their nodes, which are told the person it calls for (and check their rights).
   */
  client(local: PerennialClient, principal: Principal): PerennialClient {
    if (principal.kind === 'operator') return new ClusterClient(local, this.router, (url) => this.#peer(url));
    const peers = new Map<string, HttpClient>();
    const peer = (url: string) => {
      let client = peers.get(url);
      if (!client) peers.set(url, (client = new HttpClient({ baseUrl: url, token: this.#token, headers: onBehalfOf(principal) })));
      return client;
    };
    return new ClusterClient(local, this.router, peer);
  }

  /** The team's document and audit log, which every node of the cluster shares. */
  async teamRecords(): Promise<{ store: TeamStore; audit: AuditLog }> {
    return { store: await ClusterTeamStore.open(this.directory), audit: new ClusterAuditLog(this.directory) };
  }

  /**
   * The machines this node does not run, for listings: each live node's as it lists its own (their
   * state, runtime, instructions as they are now), the others' as the directory has them (a node
   * that does not answer soon: as it last committed them).
   */
  async elsewhere(): Promise<MachineInfo[]> {
    const rows = (await this.directory.machines()).filter((row) => !(row.owner === this.id && this.#manager?.has(row.name)));
    const runner = new Map(rows.flatMap((row) => (row.ownerLive && row.ownerUrl && row.owner !== this.id ? [[row.name, row.ownerUrl]] : [])));
    const listed = new Map<string, MachineInfo>();
    await Promise.all(
      [...new Set(runner.values())].map(async (url) => {
        const own = await Promise.race([
          this.#peer(url)
            .list({}, { here: true })
            .catch(() => []),
          settle(PEER_LISTING_MS, [] as MachineInfo[]),
        ]);
        for (const info of own) if (runner.get(info.name) === url) listed.set(info.name, { ...info, node: url });
      }),
    );
    return rows.flatMap((row) => {
      const answered = listed.get(row.name);
      if (answered) return [answered];
      const manifest = ManifestSchema.safeParse(row.manifest);
      if (!manifest.success) return [];
      const node = row.ownerLive ? row.ownerUrl : null;
      return [{ ...manifestInfo(manifest.data, node ? 'warm' : 'swapped'), nextSeq: Math.max(manifest.data.nextSeq, row.nextSeq), node }];
    });
  }

  /**
   * Hands machine `name` to whichever node is asked for it next (placement sends it to the node
   * with the most room), as a stop does: no new instruction is taken here; those given out run;
   * its state is saved and committed whole; then it is let go. Requests meanwhile wait, then go
   * where it went. Answers false, keeping it, when it could not be committed whole.
   */
  async #handOver(name: string): Promise<boolean> {
    const manager = this.#manager;
    if (!manager?.has(name) || this.#leaving.has(name)) return false;
    let done!: () => void;
    this.#leaving.set(name, new Promise<void>((resolve) => (done = resolve)));
    try {
      // Numbers given out before it began may be queued after a save: a save after them holds them.
      for (let attempt = 0; attempt < 3; attempt++) {
        await manager.save(name);
        if (!this.#ownership.isWhole(name)) continue;
        await manager.detach(name);
        // Not released (the directory down): it stays this node's until its lease runs out, then the next node takes it, whole.
        await this.#ownership.release(name).catch(() => {});
        return true;
      }
      return false;
    } catch {
      return false;
    } finally {
      this.#leaving.delete(name);
      done();
    }
  }

  /**
   * Empties the node for maintenance: no machine is placed on it any more, and each of its
   * machines is handed over once the instructions it was given have run. One that cannot be (its
   * state not committed) stays until the node stops, which commits it once more or leaves it to
   * the node that takes it after the lease.
   */
  async drain(): Promise<void> {
    this.#draining = true;
    await this.directory.drain(this.id);
    for (const { name } of this.#manager?.list() ?? []) await this.#handOver(name);
  }

  /** A node short of room hands its idle machines, the least recently used first, to a node with room: their next use warms them there. */
  async #rebalance(): Promise<void> {
    const manager = this.#manager;
    if (!manager || this.#draining || hasRoom(manager.room())) return;
    if (!placeOn(await this.directory.live(), this.id)) return;
    const idle = manager
      .list()
      .filter((m) => m.state !== 'busy' && m.pendingInstructions === 0)
      .sort((a, b) => a.lastUsedAt.localeCompare(b.lastUsedAt));
    for (const { name } of idle.slice(0, HANDED_OVER_PER_RENEWAL)) await this.#handOver(name);
  }

  // ---- MachineHome ----------------------------------------------------------------------------

  watch(listener: (event: MachineEvent) => void): () => void {
    return this.#events.watch(listener);
  }

  async cluster(): Promise<ClusterStatus> {
    return { database: this.directory.description, store: this.store.description, node: this.#url, ...(await this.directory.census()) };
  }

  isUsed(name: string): Promise<boolean> {
    return this.#ownership.isUsed(name);
  }

  claim(manifest: MachineManifest): Promise<boolean> {
    return this.#ownership.claim(manifest);
  }

  reserve(name: string): Promise<void> {
    return this.#ownership.reserve(name);
  }

  commit(manifest: MachineManifest, folder: string): Promise<void> {
    return this.#ownership.commit(manifest, folder);
  }

  retire(name: string): Promise<void> {
    return this.#ownership.retire(name);
  }

  /**
   * Leaves the cluster after the manager closed (which saved and committed every machine): the
   * machines whose last commit holds all they ran are let go at once, for any node to take; one
   * that could not be saved or committed stays this node's until its lease runs out, and the
   * node that takes it then says what was lost.
   */
  async leave(): Promise<void> {
    this.#lease.stop();
    await this.#events.stop();
    await this.directory.leave(this.id, this.#ownership.whole()).catch(() => {});
    await this.directory.close();
    this.store.close();
    await Promise.all([...this.#peers.values()].map((peer) => peer.close()));
  }
}

/** Resolves to `value` after `ms`. */
function settle<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms).unref());
}
