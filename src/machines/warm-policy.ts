import { freemem, hostname, totalmem } from 'node:os';
import type { Machine } from './machine.ts';

/** What decides how many machines stay warm. */
export interface WarmLimits {
  /** A machine left idle this long is swapped out. */
  idleSeconds: number;
  /** At most this many warm at once, when set; else as many as memory allows. */
  maxWarm?: number;
  /** Memory kept free for the rest of the system: below it, the least recently used idle machine goes. */
  reserveBytes: number;
  /** The memory the system has available now (`os.freemem`: on Linux, MemAvailable). */
  freeBytes: () => number;
}

/** Memory kept free by default: a tenth of the system's, and at least 1 GiB. */
export function defaultReserveBytes(total = totalmem()): number {
  return Math.max(1 << 30, Math.round(total / 10));
}

export const systemFreeBytes = (): number => freemem();

/** How much more a manager can keep warm (`WarmPolicy.room`). */
export interface MachineRoom {
  bytes: number;
  warm: number;
  maxWarm?: number;
  /** The computer whose memory `bytes` is (its host name): servers that share one share it. */
  computer: string;
}

const mib = (bytes: number) => `${Math.round(bytes / (1 << 20))} MiB`;

/**
 * Which machines stay warm. One left idle for `idleSeconds` is swapped out. When a machine comes
 * in while the system has less memory available than the reserve, the least recently used idle
 * one goes out; with `maxWarm`, no more than that many stay warm. How many fit is measured, not
 * assumed: a trivial machine takes ~100 MB, a busy one what it holds. A swap that fails leaves
 * the machine warm, and `onSwapFailed` says why.
 */
export class WarmPolicy {
  readonly #idleTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly limits: WarmLimits,
    private readonly machines: () => Iterable<Machine>,
    private readonly onSwapFailed: (machine: Machine, error: Error) => void,
  ) {}

  /** The rule, in words (for `perennial status`). */
  describe(): string {
    const memory = `while more than ${mib(this.limits.reserveBytes)} of memory stays available (now ${mib(this.limits.freeBytes())})`;
    return `idle machines are swapped out after ${this.limits.idleSeconds} s; machines stay warm ${memory}${this.limits.maxWarm === undefined ? '' : `, at most ${this.limits.maxWarm} at once`}`;
  }

  /** How much more this manager can keep warm: the memory available beyond the reserve (negative: short of it), and the warm machines against `maxWarm`. */
  room(): MachineRoom {
    const warm = [...this.machines()].filter((m) => m.isWarm).length;
    return {
      bytes: this.limits.freeBytes() - this.limits.reserveBytes,
      warm,
      ...(this.limits.maxWarm === undefined ? {} : { maxWarm: this.limits.maxWarm }),
      computer: hostname(),
    };
  }

  /** Restarts the machine's idle countdown. */
  touch(machine: Machine): void {
    clearTimeout(this.#idleTimers.get(machine.name));
    const timer = setTimeout(() => {
      this.#idleTimers.delete(machine.name);
      if (!machine.isIdle) return this.touch(machine);
      this.#swapOut(machine, `idle for ${this.limits.idleSeconds} s`);
    }, this.limits.idleSeconds * 1000);
    timer.unref();
    this.#idleTimers.set(machine.name, timer);
  }

  /** `justWarmed` came in: others go out if that makes too many warm, or leaves too little memory. */
  warmed(justWarmed: Machine): void {
    const warm = [...this.machines()].filter((m) => m.isWarm);
    const byAge = warm.filter((m) => m !== justWarmed && m.isIdle).sort((a, b) => a.manifest.lastUsedAt.localeCompare(b.manifest.lastUsedAt));
    const { maxWarm, reserveBytes } = this.limits;
    const excess = maxWarm === undefined ? 0 : warm.length - maxWarm;
    for (const machine of byAge.splice(0, Math.max(0, excess))) this.#swapOut(machine, `more than ${maxWarm} machines were warm (--max-warm)`);
    // What one swap frees is known only once it is done: one goes at each machine that comes in.
    const free = this.limits.freeBytes();
    if (free < reserveBytes && byAge[0])
      this.#swapOut(byAge[0], `the system had ${mib(free)} of memory available, less than the ${mib(reserveBytes)} kept free`);
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

  #swapOut(machine: Machine, reason: string): void {
    machine.swapOut(reason).catch((error: Error) => this.onSwapFailed(machine, error));
  }
}
