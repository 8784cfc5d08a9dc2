/**
 * Messages between the sandbox engine (host) and a sandbox process, over IPC. Interrupts, and
 * answers to a cell's questions, take pipes of their own (see host-channel.ts): IPC is read only
 * when no Python runs.
 */

import type { KernelPackage } from '../../kernel/kernel-package.ts';
import type { KernelDisplay } from '../engine.ts';

/** The kernel package's modules, by file name, as a sandbox machine is given them. */
export type KernelFiles = KernelPackage['files'];

/** Where a memory snapshot's side modules sat, so that they can be loaded there again. */
export interface DynlibRecord {
  name: string;
  handles: number[];
  flags: number;
  memBase: number;
  memSize: number;
  tableBase: number;
  tableSize: number;
  global: boolean;
}

/** Everything beside the heap that a restore needs. */
export interface ImageMeta {
  pyodideVersion: string;
  dynlibs: DynlibRecord[];
  loadedPackages: Record<string, string>;
  tableLength: number;
  /** Objects that proxies held at the snapshot, released at a restore (absent in images of older builds). */
  proxiedObjects?: number[];
  /**
   * The kernel the machine runs (`kernelId`). Absent in images of builds before 0.2.0; a machine
   * whose kernel is not the current one has it upgraded in place when it is restored.
   */
  kernel?: string;
}

/** A machine's state: the Pyodide memory snapshot, an archive of its files, and their metadata. */
export interface MachineImage {
  snapshot: Uint8Array;
  files: Uint8Array;
  meta: ImageMeta;
}

/** A base image's memory snapshot as a file, which sandboxes read themselves. */
export interface BaseFile {
  id: string;
  path: string;
}

/** A machine's image with its memory whole, or as a patch on a base (see memory-patch.ts) given as `Patch`. */
type ImageWith<Patch> = Omit<MachineImage, 'snapshot'> & ({ snapshot: Uint8Array } | { patch: Patch; base: BaseFile });

/**
 * A part of a memory patch as a load sends it: its bytes, or where they lie in the image file the
 * host lends the sandbox (its mailbox's `image`, see `Mailbox.lend`): memory stored raw is read
 * there by the sandbox, rather than read by the host and sent (80 MB took 330 ms so).
 */
export type PatchPart = Uint8Array | { at: number; length: number };

/** A machine's image as a load sends it. */
export type LoadImage = ImageWith<PatchPart[]>;

/** A load's image in the sandbox, its patch put together. */
export type ArrivedImage = ImageWith<Uint8Array>;

/** A machine's image as a snapshot returns it: a patch on the base it was loaded from, if any. */
export type TakenImage = Omit<MachineImage, 'snapshot'> & ({ snapshot: Uint8Array } | { patch: Uint8Array; base: string });

/** What `exportFiles` answers. */
export interface ExportedFiles {
  archive: Uint8Array;
  packages: string[];
}

/** The import names machines may auto-install, with an id for the set, so a kernel that already has it is not sent it again. */
export interface ImportNames {
  id: string;
  names: string[];
}

/** A host folder mounted in the machine, where its code works. */
export interface SandboxMount {
  hostPath: string;
  writable: boolean;
  /** Where in the machine; /workspace when absent. */
  at?: string;
}

export interface MachineConfig {
  memoryMb: number;
  outputLimit: number;
  /** Mounted (and the working directory) when set. */
  workspace?: SandboxMount;
}

export type HostMessage =
  /**
   * Boot a machine: fresh with `kernel`, or from an image (with `kernel` when the image's is to be
   * upgraded to it). With `importNames`, its kernel is then given its limits and those names.
   */
  | { type: 'load'; id: number; config: MachineConfig; image?: LoadImage; kernel?: KernelFiles; importNames?: ImportNames }
  | { type: 'call'; id: number; op: string; args: Record<string, unknown> }
  | { type: 'snapshot'; id: number }
  | { type: 'loadPackages'; id: number; paths: string[] }
  /** The machine's own files (home and /tmp) as an archive, and the packages it has loaded: what an upgrade carries to another build. */
  | { type: 'exportFiles'; id: number }
  /** Puts an archive's files in place. */
  | { type: 'importFiles'; id: number; archive: Uint8Array }
  /** Find this base's pages now and warm up on it, while waiting for a machine: a restore from it need not. */
  | { type: 'prefetch'; base: BaseFile }
  /** Lets the machine go: the process then takes the next one's `load`. */
  | { type: 'unload'; id: number };

export type ChildMessage =
  | { type: 'waiting' }
  /** The base of a `prefetch` is read and the module warmed up on it (or that failed, and the load will say why). */
  | { type: 'prefetched' }
  /** `notices`: what the machine's next result should say about its load (a kernel left as it was); `timings`: where its time went. */
  /** `cpu`: the processor time (ms) the process spent readying for this machine (since it started, or let the last one go) and on the load. */
  | { type: 'loaded'; id: number; notices: string[]; timings: Record<string, number>; cpu: { readying: number; load: number } }
  | { type: 'reply'; id: number; ok: true; result: unknown }
  | { type: 'reply'; id: number; ok: false; error: string }
  /** A snapshot's state is taken: the machine takes commands again, and its `image` follows. `timings`: the pause's, by phase. */
  | { type: 'paused'; id: number; lost: Array<{ name: string; reason: string }>; timings: Record<string, number> }
  /** `timings`: where the snapshot's time went in the sandbox after its pause, by phase. */
  | { type: 'image'; id: number; image: TakenImage; timings: Record<string, number> }
  | { type: 'out'; stream: 'stdout' | 'stderr'; text: string }
  /** The running cell asks the person (`input()`); the answer goes back on the answer pipe, with `n`. */
  | { type: 'input'; n: number; prompt: string; password: boolean }
  /** What the running cell displayed, as it displayed it (the result carries it too). */
  | { type: 'display'; entry: KernelDisplay }
  /** Pyodide suffered a fatal error, or something nothing caught; the machine must be restored. */
  | { type: 'fatal'; error: string };
