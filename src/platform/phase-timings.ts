/**
 * Where the milliseconds of an operation go (a checkpoint, a swap-in), phase by phase, for whoever
 * listens: the benchmarks print them. Published on a diagnostics channel, so that a server nobody
 * measures pays one clock read per phase and sends nothing.
 */
import { channel } from 'node:diagnostics_channel';

/** One phase of an operation and how long it took. */
export interface PhaseTiming {
  phase: string;
  ms: number;
}

const phases = channel('perennial:phases');

/**
 * Times the phases of one operation as they end, each from the end of the one before; keeps them
 * (`times`) for a process that passes them on to the one that listens (a sandbox process).
 */
export class PhaseClock {
  readonly times: Record<string, number> = {};
  #last = performance.now();

  /**
   * The phase `phase` ends now. `within`: phases another process timed during it, by name, which
   * are told as they are; `phase` is then what is left of its time (the messages crossing).
   */
  lap(phase: string, within: Record<string, number> = {}): void {
    const now = performance.now();
    let ms = now - this.#last;
    for (const [part, partMs] of Object.entries(within)) {
      this.#add(part, partMs);
      ms -= partMs;
    }
    // Another process's phases may overlap this one's own (a thread that starts within it).
    this.#add(phase, Math.max(0, ms));
    this.#last = now;
  }

  #add(phase: string, ms: number): void {
    this.times[phase] = (this.times[phase] ?? 0) + ms;
    if (phases.hasSubscribers) phases.publish({ phase, ms } satisfies PhaseTiming);
  }
}

/** The processor time a sandbox process spent on one machine's load, in ms: readying (its start, or letting the last machine go, and booting ahead) and the load. */
export interface LoadCpu {
  /** Whether the process held a machine before this one. */
  reused: boolean;
  readying: number;
  load: number;
}

const loadCpu = channel('perennial:load-cpu');

/** Tells whoever listens what a load cost in processor time. */
export function reportLoadCpu(cpu: LoadCpu): void {
  if (loadCpu.hasSubscribers) loadCpu.publish(cpu);
}

/** Calls `listener` with every load's processor time reported in this process until the returned function is called. */
export function listenToLoadCpu(listener: (cpu: LoadCpu) => void): () => void {
  const onMessage = (message: unknown) => listener(message as LoadCpu);
  loadCpu.subscribe(onMessage);
  return () => loadCpu.unsubscribe(onMessage);
}

/** Calls `listener` with every phase published in this process until the returned function is called. */
export function listenToPhases(listener: (timing: PhaseTiming) => void): () => void {
  const onMessage = (message: unknown) => listener(message as PhaseTiming);
  phases.subscribe(onMessage);
  return () => phases.unsubscribe(onMessage);
}
