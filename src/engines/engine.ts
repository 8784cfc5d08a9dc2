import type { Displayed, ExecResult, InputAnswerer, InputRequest, LostItem, MachineRuntime, StreamName } from '../shared/types.ts';
import type { EngineName } from '../shared/requests.ts';
import type { KernelArgs, KernelOp, KernelResult } from './kernel-commands.ts';
import { CodedError } from '../platform/coded-error.ts';

/** What a machine asks of the engine that runs it. */
/** How long an engine's pool of processes started ahead stays filled after the last machine of it was made or swapped in. */
export const DEFAULT_POOL_IDLE_SECONDS = 300;

export interface EngineOptions {
  /** Per-machine memory cap in MiB; an allocation beyond it is a MemoryError. */
  memoryMb: number;
  /** Bytes of stdout+stderr kept per instruction before the rest is replaced by a marker. */
  outputLimit: number;
  /** The machine's own folder on the host (`files/`): a python machine's code works in it, unless given `folder`. */
  workdir: string;
  /**
   * A host folder of the person's that the code works in (a notebook's): the python engine's
   * working directory; the sandbox mounts it read-write, at the same path where it can.
   */
  folder?: string;
  /** python engine: the interpreter; sandbox engine ignores it. */
  python?: string;
  /** python engine: the folder of the machine's own environment, where its packages go (made at its first start). */
  environment?: string;
  /** sandbox engine: a host folder mounted at /workspace. */
  workspace?: { hostPath: string; writable: boolean };
  /** sandbox engine: whether the machine may reach the network. Default off. */
  network?: boolean;
  /** Whose machine it is (a team's person): machines of different tenants never share a process. */
  tenant?: string;
}

export type OutputListener = (stream: StreamName, text: string) => void;

/**
 * What a cell displayed, as its kernel places it: after `output_chars` characters of the cell's
 * output (the machine turns that into the `afterOutput` of a `DisplayEntry`).
 */
export type KernelDisplay = Displayed & { output_chars: number };

/** Who hears from a running cell. */
export interface CellListeners {
  /** What it prints, as it prints it. */
  onOutput: OutputListener;
  /** Answers its `input()`; without it, the cell's EOFError says `NOBODY_TO_ASK`. */
  onInput?: InputAnswerer;
  /** What it displays, as it displays it (its result carries them all as well). */
  onDisplay?: (entry: KernelDisplay) => void;
}

/** Why a cell's `input()` has no answer when its instruction came with no way to ask. */
export const NOBODY_TO_ASK = 'the client that sent this cell cannot answer questions; put the value in the code instead';

/** What an engine sends its kernel for a question: the answer, or why there is none (the EOFError's message). */
export type QuestionReply = { value: string } | { error: string };

/**
 * The questions of one running cell, put to whoever sent it (`onInput`). A new question gives up
 * the one before it (an interrupt cut that one short), and so does the cell's end.
 */
export class CellQuestions {
  #current?: AbortController;

  constructor(readonly onInput: InputAnswerer | undefined) {}

  /** The reply for the kernel, or undefined when nobody waits for it any more. */
  async answer(request: InputRequest): Promise<QuestionReply | undefined> {
    this.#current?.abort();
    const question = (this.#current = new AbortController());
    let reply: QuestionReply;
    try {
      if (!this.onInput) throw new Error(NOBODY_TO_ASK);
      reply = { value: await this.onInput(request, question.signal) };
    } catch (error) {
      reply = { error: (error as Error).message };
    }
    if (question.signal.aborted) return undefined;
    this.#current = undefined;
    return reply;
  }

  /** The cell ended: nobody waits for an answer. */
  end(): void {
    this.#current?.abort();
  }
}

/** A snapshot whose state is taken: the engine takes calls again, and its file may still be being written. */
export interface SnapshotReport {
  /** What the snapshot could not keep; it is reported again by the next instruction after a restore. */
  lost: LostItem[];
  /** Settles once the file is whole and synced, with its size; rejects when it could not be written. */
  written: Promise<{ bytes: number }>;
}

/**
 * One running interpreter for one machine. A machine makes a new Engine for every swap-in:
 * `start()`, then `restore()` when there is a snapshot, then `ready()`, then any number of calls,
 * then `stop()`.
 * Calls other than `interrupt()` must not overlap; the machine serialises them.
 */
export interface Engine {
  readonly name: EngineName;
  /** The operating-system process running the machine, once there is one. */
  readonly pid: number | undefined;
  /** What the machine runs on, once its interpreter is up. */
  readonly runtime: MachineRuntime | undefined;
  /**
   * Starts the interpreter. It must not depend on the working directory's contents, nor hold it
   * open: a rollback may put the checkpoint's files in its place before the next call.
   */
  start(): Promise<void>;
  /**
   * Loads the state a snapshot holds; what it could not keep comes with the next result. Answers
   * what else that result should say about the restore.
   */
  restore(snapshotPath: string): Promise<RestoreReport>;
  /** Resolves once calls can run: a machine without a snapshot is loaded fresh by now. */
  ready(): Promise<void>;
  /** Runs one cell, telling `listeners` what it prints, asks and displays as it runs. */
  run(code: string, cell: number, listeners: CellListeners): Promise<ExecResult>;
  /** Asks the running cell to stop (KeyboardInterrupt). Safe to call at any time. */
  interrupt(): void;
  /** One of the kernel's commands (variables, files, completion...), passed through as it is. */
  command<Op extends KernelOp>(op: Op, args: KernelArgs<Op>): Promise<KernelResult<Op>>;
  /** Installs packages into the machine; answers what was installed, in words. */
  installPackages(packages: string[]): Promise<string>;
  /**
   * Moves the machine onto the newest runtime this Perennial ships, when it runs on an older one
   * (a sandbox machine on an older Pyodide); the engine keeps running, on the new one. Absent
   * where the user chose the runtime (the python engine's interpreter).
   */
  upgrade?(): Promise<UpgradeReport>;
  /**
   * Takes the machine's state, to be written to `path`; the engine keeps running. Answers once
   * the state is taken: the machine's pause is over, and calls may run while `written` settles.
   */
  snapshot(path: string): Promise<SnapshotReport>;
  /**
   * Stops the interpreter at once; pending calls fail with EngineExitedError. `last`: the server
   * is going away, so nothing it holds is kept for a later machine (a sandbox's process).
   */
  stop(options?: { last?: boolean }): Promise<void>;
  /** Resolves when the interpreter has exited, for whatever reason. */
  readonly exited: Promise<EngineExit>;
}

export interface UpgradeReport {
  from: MachineRuntime;
  to: MachineRuntime;
  /** What could not be carried, each with its reason. */
  lost: LostItem[];
}

/** The machine runs on the newest runtime already. */
export class AlreadyCurrentError extends CodedError {
  static override readonly errorCode = 'AlreadyCurrent';
  constructor(runtime: string) {
    super(`it runs ${runtime} already, the newest this Perennial has`);
  }
}

export interface RestoreReport {
  /** Sentences for the next result (the machine came back, but something about it is worth knowing). */
  notices: string[];
}

export interface EngineExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when `stop()` asked for it. */
  requested: boolean;
}

/** The interpreter went away while a call was in flight. */
export class EngineExitedError extends CodedError {
  static override readonly errorCode = 'EngineExited';
  constructor(
    readonly exit: EngineExit,
    detail = '',
  ) {
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    super(`The Python process ${how} while running this instruction${detail ? ` (last error output: ${detail})` : ''}`);
  }
}

/** A snapshot a newer Perennial wrote, in a format this build cannot read: refused, and left as it is. */
export class NewerSnapshotError extends CodedError {
  static override readonly errorCode = 'SnapshotVersionMismatch';
  constructor(detail: string) {
    super(`${detail}; update Perennial to use this machine`);
  }
}

/** The engine could not start (interpreter missing, too old, sandbox unavailable...). */
export class EngineStartError extends CodedError {
  static override readonly errorCode = 'EngineStartFailed';
}

/** A command the kernel itself rejected (unknown variable, bad expression...). */
export class KernelCommandError extends CodedError {
  static override readonly errorCode = 'KernelCommandFailed';
}

export type EngineFactory = (options: EngineOptions) => Engine;
