import type { BaseImageShelf } from '../engines/base-image-shelf.ts';
import { ENGINES } from '../engines/descriptors.ts';
import type { EngineSet } from '../engines/index.ts';
import type { LockRecord } from '../platform/data-dir-lock.ts';
import type { EngineName } from '../shared/requests.ts';
import type { ExecResult, MachineEvent, SenderListeners } from '../shared/types.ts';
import { DATA_DIR_HOME, type MachineHome } from './machine-home.ts';
import type { MachineSettings } from './machine.ts';
import { defaultReserveBytes, systemFreeBytes, type WarmLimits } from './warm-policy.ts';

/* What a MachineManager is opened with, and what it takes and gives besides machines. */

export const DEFAULT_TIMEOUT_SECONDS = 15;
export const DEFAULT_IDLE_SECONDS = 300;
export const DEFAULT_OUTPUT_LIMIT = 1 << 20;
export const DEFAULT_AUTO_CHECKPOINTS = 10;
/** Longest a busy machine's changed state goes unsaved: a crash costs it at most this much work. */
const DEFAULT_SAVE_WITHIN_MS = 30_000;

export interface MachineManagerOptions {
  dataDir: string;
  /** Seconds without an instruction before a machine is swapped out. Default 300. */
  idleSeconds?: number;
  /** Most machines kept warm at once; beyond it the least recently used is swapped out. Default: as many as memory allows (see `WarmPolicy`). */
  maxWarm?: number;
  /** How the machines' warmth is measured against memory; default the system's (tests give their own). */
  memory?: Partial<Pick<WarmLimits, 'reserveBytes' | 'freeBytes'>>;
  /** Default: the engines' registry's first that is available (src/engines/descriptors.ts). */
  defaultEngine?: EngineName;
  /** Default per-instruction timeout. Default 15 s. */
  defaultTimeoutSeconds?: number;
  /** Output bytes kept per instruction. Default 1 MiB. */
  outputLimit?: number;
  /** Time between an interrupt and a hard stop. Default 2000 ms. */
  interruptGraceMs?: number;
  /** Quiet time before a changed machine is saved (and the save kept as an automatic checkpoint). Default 1000 ms. */
  saveDelayMs?: number;
  /** Longest a changed state goes unsaved while instructions keep coming (default 30 s): what a crash can cost a busy machine. */
  saveWithinMs?: number;
  /** Automatic checkpoints kept per machine (one per save of a changed state). Default 10. */
  autoCheckpoints?: number;
  /** Whose a machine is (a team's person), asked as it starts: machines of different tenants never share a sandbox process. */
  tenantOf?: (machine: string) => Promise<string | undefined>;
  /** Sandbox processes are kept ready for this long after a sandbox machine was last made or swapped in. Default 300 s. */
  poolIdleSeconds?: number;
  /** The engines; default the built-in ones for this data dir. */
  engines?: EngineSet;
  /** The lock a stopping owner handed to this process (`DataDirLock.handOver`); taken as usual when it did not. */
  handedLock?: LockRecord;
  /** Where the machines are kept beyond the data dir (a cluster's); default the data dir alone. */
  home?: MachineHome;
  /** Where sandbox base images are shared with other nodes (a cluster's). */
  baseImages?: BaseImageShelf;
}

/** What a manager runs by, every default filled in: resolved once, when it opens. */
export interface ManagerSettings {
  defaultEngine: EngineName;
  defaultTimeoutSeconds: number;
  /** What each machine is made with. */
  machines: MachineSettings;
  warm: WarmLimits;
  home: MachineHome;
}

/** `options` with their defaults; `available`: whether an engine can run here, for the default engine. */
export function managerSettings(options: MachineManagerOptions, available: (engine: EngineName) => boolean): ManagerSettings {
  return {
    // The registry's first engine that is available here.
    defaultEngine: options.defaultEngine ?? (ENGINES.find((engine) => available(engine.name)) ?? ENGINES.at(-1)!).name,
    defaultTimeoutSeconds: options.defaultTimeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
    machines: {
      outputLimit: options.outputLimit ?? DEFAULT_OUTPUT_LIMIT,
      interruptGraceMs: options.interruptGraceMs ?? 2000,
      saveDelayMs: options.saveDelayMs ?? 1000,
      saveWithinMs: options.saveWithinMs ?? DEFAULT_SAVE_WITHIN_MS,
      autoCheckpoints: options.autoCheckpoints ?? DEFAULT_AUTO_CHECKPOINTS,
      ...(options.tenantOf ? { tenantOf: options.tenantOf } : {}),
    },
    warm: {
      idleSeconds: options.idleSeconds ?? DEFAULT_IDLE_SECONDS,
      maxWarm: options.maxWarm,
      reserveBytes: options.memory?.reserveBytes ?? defaultReserveBytes(),
      freeBytes: options.memory?.freeBytes ?? systemFreeBytes,
    },
    home: options.home ?? DATA_DIR_HOME,
  };
}

export interface ExecOptions extends SenderListeners {
  timeoutSeconds?: number;
  /** Stop whatever is pending or running on the machine first. */
  interrupt?: boolean;
}

/** The events of `/v1/events`, with a finished instruction's whole result. */
export type ManagerEvent = Exclude<MachineEvent, { type: 'instruction' }> | { type: 'instruction'; name: string; seq: number; result: ExecResult };

/** A manager event as clients get it: a finished instruction without its result. */
export function toMachineEvent(event: ManagerEvent): MachineEvent {
  return event.type === 'instruction' ? { type: event.type, name: event.name, seq: event.seq, error: 'error' in event.result } : event;
}
