import { randomUUID } from 'node:crypto';
import type { MachineHome } from '../machines/machine-home.ts';
import type { MachineManager } from '../machines/machine-manager.ts';
import { ManifestSchema, type MachineManifest } from '../machines/machine-store.ts';
import { VERSION } from '../shared/version.ts';
import { markNodeCache } from '../platform/node-cache.ts';
import { ClusterDirectory } from './directory.ts';
import { ObjectStore } from './object-store.ts';
import type { ClusterSettings } from './cluster-settings.ts';
import { StoredFolders } from './stored-folders.ts';
import { SharedBaseImages } from './shared-base-images.ts';
import { ClusterClient } from './cluster-client.ts';
import { MachineRouter } from './machine-router.ts';
import { NodeLease } from './node-lease.ts';
import { MachineOwnership } from './machine-ownership.ts';
import { Departures, HandOver } from './hand-over.ts';
import { MachinePlacer } from './machine-placer.ts';
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

/** How long a listing waits for another node's own listing before it gives that node's machines as their last commit has them. */
const PEER_LISTING_MS = 3000;

/** The parts of a node that work on its manager's machines: there once it has joined. */
interface Joined {
  manager: MachineManager;
  placer: MachinePlacer;
  handOver: HandOver;
}

/**
 * This process as a node of a cluster, and the coordinator of its parts: its lease
 * (`NodeLease`); the machines it owns, which are its manager's home (`MachineOwnership`, with
 * the bucket's clean-up); where each request for a machine goes (`MachinePlacer`, through the
 * `router`); machines handed to other nodes (`HandOver`: one by one, draining, rebalancing); and
 * what its clients hear of the other nodes (listings, status, events).
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
  readonly #departures = new Departures();
  /** Its parts that need the manager, which is made after the node (the node is its home): requests before the join wait for them. */
  readonly #joined: Promise<Joined>;
  readonly #joinedWith: (parts: Joined) => void;
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
    this.#ownership = new MachineOwnership(directory, this.#folders, { id: this.id, url: () => this.#url }, (name) => this.#departures.has(name));
    let joinedWith = (_parts: Joined) => {};
    this.#joined = new Promise((resolve) => (joinedWith = resolve));
    this.#joinedWith = joinedWith;
    this.router = new MachineRouter(
      async (name, forwarded) => {
        const { placer } = await this.#joined;
        return name === null ? placer.placeNew(forwarded) : placer.place(name, forwarded);
      },
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
    const handOver = new HandOver(manager, this.directory, this.#ownership, this.#departures, this.id);
    const placer = new MachinePlacer(manager, this.directory, this.#ownership, this.#folders, this.#departures, {
      id: this.id,
      leaseHeld: () => this.leaseHeld,
      handOver,
    });
    this.#events.start(url);
    manager.on('event', (event) => this.#events.announce(toMachineEvent(event)));
    const { database, store, leaseSeconds, advertiseUrl } = this.settings;
    await markNodeCache(manager.dataDir, {
      cluster: { database, store: store.url, storeEndpoint: store.endpoint, storeRegion: store.region, leaseSeconds, advertiseUrl },
      ...listening,
      url,
    });
    await this.#lease.enter(url, VERSION, {
      room: () => manager.custody.room(),
      lapsed: () => placer.letGoOfTaken(),
      renewed: () => handOver.rebalanceSoon(),
    });
    await this.#bringIn(manager);
    this.#joinedWith({ manager, placer, handOver });
  }

  async #bringIn(manager: MachineManager): Promise<void> {
    const { custody } = manager;
    const { manifests } = custody.store.list();
    const known = await this.directory.madeAt(manifests.map((manifest) => manifest.name));
    for (const manifest of manifests) {
      const { name } = manifest;
      if (known.has(name)) {
        // This node's cache of the cluster's machine; or another machine of that name, kept aside, whole.
        if (known.get(name) !== manifest.createdAt) {
          const kept = await custody.store.setAsideMachine(name);
          const where = kept ? `its folder is kept, whole, at ${kept}` : 'its folder could not be moved aside';
          custody.tell(name, `Machine ${name} of this data dir is not served: the cluster has another machine by that name; ${where}.`);
        }
        continue;
      }
      if (!(await this.claim(manifest))) continue;
      await custody.attach(name, {});
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
    const { custody } = (await this.#joined).manager;
    const rows = (await this.directory.machines()).filter((row) => !(row.owner === this.id && custody.has(row.name)));
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

  /** Empties the node for maintenance (see `HandOver.drain`). */
  async drain(): Promise<void> {
    await (await this.#joined).handOver.drain();
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
