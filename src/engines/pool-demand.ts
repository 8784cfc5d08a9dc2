/**
 * The pool fills once this many machines have been made or swapped in, each within the idle time
 * of the one before: a ready process costs memory (a sandbox ~110 MB, a python kernel ~15 MB), and
 * someone who works in one machine would pay that for nothing. A second machine made within
 * minutes of the first says that more are coming.
 */
const POOL_DEMAND = 2;
/**
 * A refill starts a process: it waits this long after one was handed out, so that the machine's
 * first instruction does not compete with it for a small host's CPU.
 */
const REFILL_DELAY_MS = 250;

/**
 * When an engine's pool of processes started ahead fills and empties (the sandbox's; the python
 * engine's, per interpreter): `fill` from the second machine made or swapped in within the idle
 * time, a moment after a process was handed out; `empty` after the idle time without one.
 */
export class PoolDemand {
  #demand = 0;
  #idle?: NodeJS.Timeout;
  #refill?: NodeJS.Timeout;

  constructor(
    private readonly idleMs: number,
    private readonly pool: { fill(): void; empty(): void },
  ) {}

  /** Whether machines are being made or swapped in: a process that comes ready now is kept. */
  get wanted(): boolean {
    return this.#demand > 0;
  }

  /** Whether the pool fills (machines keep coming): a process a machine left is worth keeping. */
  get filling(): boolean {
    return this.#demand >= POOL_DEMAND;
  }

  /** A machine was made or swapped in where a pooled process could serve it. */
  demanded(): void {
    if (++this.#demand >= POOL_DEMAND) this.#fillLater();
    // Counts the idle time of the window, which starts the demand over.
    else this.#emptyWhenIdle();
  }

  /** Fills the pool now rather than once machines are made or swapped in. */
  prewarm(): void {
    this.#demand = Math.max(this.#demand, POOL_DEMAND - 1);
    this.#fill();
  }

  /** Stops its timers; the pool empties itself. */
  close(): void {
    this.#demand = 0;
    clearTimeout(this.#idle);
    clearTimeout(this.#refill);
  }

  #fillLater(): void {
    this.#emptyWhenIdle();
    this.#refill ??= setTimeout(() => {
      this.#refill = undefined;
      this.#fill();
    }, REFILL_DELAY_MS);
    this.#refill.unref();
  }

  #fill(): void {
    this.#emptyWhenIdle();
    this.pool.fill();
  }

  /** Empties the pool once no machine has been made or swapped in for a while. */
  #emptyWhenIdle(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      this.#demand = 0;
      this.pool.empty();
    }, this.idleMs);
    this.#idle.unref();
  }
}
