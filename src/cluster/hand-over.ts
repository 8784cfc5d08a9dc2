import type { MachineManager } from '../machines/machine-manager.ts';
import type { ClusterDirectory } from './directory.ts';
import type { MachineOwnership } from './machine-ownership.ts';
import { hasRoom, placeOn } from './placement.ts';

/** How many idle machines a node short of room hands over at each renewal: a few at a time, so that the load it sends is measured before more follows. */
const HANDED_OVER_PER_RENEWAL = 2;

/** Machines on their way to other nodes: requests for them wait until they have gone, then go where they went. */
export class Departures {
  readonly #leaving = new Map<string, Promise<void>>();

  has(name: string): boolean {
    return this.#leaving.has(name);
  }

  /** Resolves once machine `name` has gone (or stayed): at once when it is not leaving. */
  async settled(name: string): Promise<void> {
    await this.#leaving.get(name);
  }

  /** Runs `leave` with machine `name` marked as leaving; none when it is leaving already. */
  async during(name: string, leave: () => Promise<boolean>): Promise<boolean> {
    if (this.#leaving.has(name)) return false;
    let done!: () => void;
    this.#leaving.set(name, new Promise<void>((resolve) => (done = resolve)));
    try {
      return await leave();
    } finally {
      this.#leaving.delete(name);
      done();
    }
  }
}

/**
 * Machines a node hands to other nodes: one at a time as a stop does (`machine`), every one when
 * the node drains for maintenance, and its idle ones, a few per lease renewal, while it is short of
 * room. Whichever node is asked for a machine next takes it (placement sends it to the node with
 * the most room).
 */
export class HandOver {
  /** Set once the node drains: it hands every machine over, and none is placed on it. */
  #draining = false;
  #rebalancing = false;

  constructor(
    private readonly manager: MachineManager,
    private readonly directory: ClusterDirectory,
    private readonly ownership: MachineOwnership,
    private readonly departures: Departures,
    private readonly nodeId: string,
  ) {}

  get draining(): boolean {
    return this.#draining;
  }

  /**
   * Hands machine `name` over: no new instruction is taken here; those given out run; its state
   * is saved and committed whole; then it is let go. Requests meanwhile wait, then go where it
   * went. Answers false, keeping it, when it could not be committed whole.
   */
  async machine(name: string): Promise<boolean> {
    const { manager, ownership } = this;
    if (!manager.custody.has(name)) return false;
    return this.departures.during(name, async () => {
      try {
        // Numbers given out before it began may be queued after a save: a save after them holds them.
        for (let attempt = 0; attempt < 3; attempt++) {
          await manager.save(name);
          if (!ownership.isWhole(name)) continue;
          await manager.custody.detach(name);
          // Not released (the directory down): it stays this node's until its lease runs out, then the next node takes it, whole.
          await ownership.release(name).catch(() => {});
          return true;
        }
        return false;
      } catch {
        return false;
      }
    });
  }

  /**
   * Empties the node: no machine is placed on it any more, and each of its machines is handed
   * over once the instructions it was given have run. One that cannot be (its state not
   * committed) stays until the node stops, which commits it once more or leaves it to the node
   * that takes it after the lease.
   */
  async drain(): Promise<void> {
    this.#draining = true;
    await this.directory.drain(this.nodeId);
    for (const { name } of this.manager.list()) await this.machine(name);
  }

  /** After a lease renewal: one round of `#rebalance` at a time; the directory down, the next renewal tries again. */
  rebalanceSoon(): void {
    if (this.#rebalancing) return;
    this.#rebalancing = true;
    void this.#rebalance()
      .catch(() => {})
      .finally(() => (this.#rebalancing = false));
  }

  /** While short of room: hands idle machines, the least recently used first, to a node with room; their next use warms them there. */
  async #rebalance(): Promise<void> {
    const { manager } = this;
    if (this.#draining || hasRoom(manager.custody.room())) return;
    if (!placeOn(await this.directory.live(), this.nodeId)) return;
    const idle = manager
      .list()
      .filter((m) => m.state !== 'busy' && m.pendingInstructions === 0)
      .sort((a, b) => a.lastUsedAt.localeCompare(b.lastUsedAt));
    for (const { name } of idle.slice(0, HANDED_OVER_PER_RENEWAL)) await this.machine(name);
  }
}
