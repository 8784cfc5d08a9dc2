import type { Machine } from './machine.ts';

/**
 * Which machines stay warm: one left idle for `idleSeconds` is swapped out, and no more than
 * `maxWarm` are warm at once (beyond it the least recently used idle ones are swapped out). A
 * swap that fails leaves the machine warm, and `onSwapFailed` says why.
 */
export class WarmPolicy {
  readonly #idleTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly limits: { idleSeconds: number; maxWarm: number },
    private readonly machines: () => Iterable<Machine>,
    private readonly onSwapFailed: (machine: Machine, error: Error) => void,
  ) {}

  /** Restarts the machine's idle countdown. */
  touch(machine: Machine): void {
    clearTimeout(this.#idleTimers.get(machine.name));
    const timer = setTimeout(() => {
      this.#idleTimers.delete(machine.name);
      if (!machine.isIdle) return this.touch(machine);
      this.#swapOut(machine);
    }, this.limits.idleSeconds * 1000);
    timer.unref();
    this.#idleTimers.set(machine.name, timer);
  }

  /** `justWarmed` came in: others go out if that makes too many warm. */
  warmed(justWarmed: Machine): void {
    const warm = [...this.machines()].filter((m) => m.isWarm);
    let excess = warm.length - this.limits.maxWarm;
    const byAge = warm.filter((m) => m !== justWarmed && m.isIdle).sort((a, b) => a.manifest.lastUsedAt.localeCompare(b.manifest.lastUsedAt));
    for (const machine of byAge) {
      if (excess-- <= 0) break;
      this.#swapOut(machine);
    }
  }

  /** The machine is gone: no countdown for it. */
  forget(name: string): void {
    clearTimeout(this.#idleTimers.get(name));
    this.#idleTimers.delete(name);
  }

  close(): void {
    for (const timer of this.#idleTimers.values()) clearTimeout(timer);
    this.#idleTimers.clear();
  }

  #swapOut(machine: Machine): void {
    machine.swapOut().catch((error: Error) => this.onSwapFailed(machine, error));
  }
}
