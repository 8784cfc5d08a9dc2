import { PoolDemand } from '../pool-demand.ts';
import type { SandboxProcess } from './sandbox-process.ts';

/** Processes a swapped-out machine left, kept ready beyond the pool's size for the next swap-in (each ~110 MB). */
const REUSED_SPARE = 2;
/** A process serves at most this many machines, one after the other, then ends: what a realm gathers over time stays bounded. */
const MACHINES_PER_PROCESS = 100;

export interface SandboxPoolOptions {
  /** Processes kept ready, Pyodide booted ahead, for new machines and swap-ins; 0 for none. */
  size: number;
  /** The pool is emptied after this long without a machine made or swapped in. */
  idleMs: number;
  /** A new process as any machine may run in (no network, no folder), told to read ahead what machines load from. */
  start(): SandboxProcess;
}

/**
 * The sandbox processes ready for a machine: started ahead once machines are being made or
 * swapped in (`PoolDemand`), as a process costs ~110 MB, and those a machine left, which serve the
 * next machine of the same tenant without a process start.
 */
export class SandboxPool {
  readonly #options: SandboxPoolOptions;
  readonly #demand: PoolDemand;
  /** Processes with Pyodide booted ahead and no machine. */
  #ready: SandboxProcess[] = [];
  /** Processes letting their last machine go (`release`), ready after. */
  readonly #unloading = new Set<SandboxProcess>();
  #closed = false;

  constructor(options: SandboxPoolOptions) {
    this.#options = options;
    this.#demand = new PoolDemand(options.idleMs, {
      fill: () => this.#refill(),
      empty: () => void this.#drain(),
    });
  }

  /** Starts filling the pool now rather than once machines are made or swapped in. */
  prewarm(): void {
    this.#demand.prewarm();
  }

  /** Processes waiting, warmed up on the base. */
  get ready(): number {
    return this.#ready.filter((sandbox) => sandbox.alive && sandbox.prefetched).length;
  }

  /** A ready process for a machine of `tenant`: one its machines left (already warm), else one that never held a machine. */
  take(tenant: string | undefined): SandboxProcess | undefined {
    this.#ready = this.#ready.filter((ready) => ready.alive);
    const left = this.#ready.findIndex((ready) => ready.served > 0 && ready.tenant === tenant);
    const at = left >= 0 ? left : this.#ready.findIndex((ready) => ready.served === 0);
    return at >= 0 ? this.#ready.splice(at, 1)[0] : undefined;
  }

  /** A machine was made or swapped in where a pooled process could serve it. */
  demanded(): void {
    this.#demand.demanded();
  }

  /**
   * The machine of `sandbox` is done with it (swapped out, stopped): while machines keep coming
   * (the pool fills), a pooled process that served few enough machines lets it go and waits for
   * the next of its tenant; any other ends. Settles once it is ready, or ended.
   */
  async release(sandbox: SandboxProcess): Promise<void> {
    const reusable =
      !this.#closed &&
      this.#demand.filling &&
      sandbox.alive &&
      sandbox.idle &&
      sandbox.pooled &&
      sandbox.served < MACHINES_PER_PROCESS &&
      this.#ready.length + this.#unloading.size < this.#options.size + REUSED_SPARE;
    if (!reusable) {
      await sandbox.kill();
      return;
    }
    // Ready once its machine is gone from it: a load sent meanwhile would meet the last machine.
    this.#unloading.add(sandbox);
    try {
      await sandbox.unload();
      if (this.#closed || !sandbox.alive) throw new Error('not needed');
      this.#ready.push(sandbox);
    } catch {
      await sandbox.kill();
    } finally {
      this.#unloading.delete(sandbox);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#demand.close();
    await this.#drain();
  }

  #refill(): void {
    // Processes another tenant's machines left serve only that tenant's: they do not count.
    while (!this.#closed && this.#ready.filter((ready) => ready.served === 0 || ready.tenant === undefined).length < this.#options.size)
      this.#ready.push(this.#options.start());
  }

  async #drain(): Promise<void> {
    await Promise.all([...this.#ready.splice(0), ...this.#unloading].map((sandbox) => sandbox.kill().catch(() => {})));
  }
}
