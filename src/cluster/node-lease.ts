import { performance } from 'node:perf_hooks';
import type { ClusterDirectory, NodeRoom } from './directory.ts';

/** What a node does at each renewal of its lease. */
export interface Renewal {
  /** Its room now, said with the renewal. */
  room(): NodeRoom;
  /** The lease had run out before this renewal (the node was paused or cut off): it catches up before the lease is trusted again. */
  lapsed(): Promise<void>;
  /** After each renewal that succeeded. */
  renewed(): void;
}

/**
 * A node's lease in the directory: entered with its address and room, renewed four times a lease
 * (a monotonic clock tells how long ago, which runs on while the process is paused), and held
 * while surely renewed less than a lease ago.
 */
export class NodeLease {
  /** When the last renewal that succeeded was sent. */
  #renewedAt = Number.NEGATIVE_INFINITY;
  #renewal?: NodeJS.Timeout;

  constructor(
    private readonly directory: ClusterDirectory,
    readonly id: string,
    private readonly leaseSeconds: number,
  ) {}

  /** Enters the node, at `url`, as `version`'s, and renews its lease from then on. */
  async enter(url: string, version: string, renewal: Renewal): Promise<void> {
    const sent = performance.now();
    await this.directory.join({ id: this.id, url, version }, renewal.room());
    this.#renewedAt = sent;
    this.#renewal = setInterval(() => void this.#renew(renewal), (this.leaseSeconds * 1000) / 4);
    this.#renewal.unref();
  }

  /** Whether the lease surely runs: renewed less than a lease ago, with a margin for the round trip. */
  get held(): boolean {
    return performance.now() - this.#renewedAt < this.leaseSeconds * 1000 * 0.8;
  }

  async #renew(renewal: Renewal): Promise<void> {
    const sent = performance.now();
    try {
      if (!(await this.directory.renew(this.id, renewal.room()))) return;
      if (!this.held) await renewal.lapsed();
      this.#renewedAt = sent;
      renewal.renewed();
    } catch {
      // The directory is down: the lease runs out unless it comes back. Every write for a machine
      // checks its generation, so nothing is lost; requests meanwhile get the directory's error.
    }
  }

  stop(): void {
    clearInterval(this.#renewal);
  }
}
