import type { NewMachineOptions } from './requests.ts';
import type {
  CheckpointInfo,
  Completeness,
  Completions,
  ExecResult,
  FileContent,
  FileListing,
  HistoryEntry,
  SenderListeners,
  InterruptResult,
  MachineEvent,
  MachineInfo,
  ObjectInfo,
  OutputChunk,
  ResetResult,
  RollbackResult,
  UpgradeResult,
  StatusReport,
  VariableDetail,
  VariableSummary,
  WrittenFile,
} from './types.ts';
import { CodedError } from '../platform/coded-error.ts';

/** An `interrupt` run neither asks nor shows displays as they come: it goes over plain HTTP. */
export interface RunOptions extends SenderListeners {
  timeoutSeconds?: number;
  /** Stop whatever is pending or running on the machine first. */
  interrupt?: boolean;
  /** Called for each output line while the instruction runs. */
  onOutput?: (chunk: OutputChunk) => void;
}

/** The backend has no way to do this (a Perennial extension that hosted ForeverVM lacks). */
export class UnsupportedByBackendError extends CodedError {
  static override readonly errorCode = 'UnsupportedByBackend';
  constructor(what: string) {
    super(`This backend cannot ${what} (it is a Perennial extension the backend does not offer)`);
  }
}

/**
 * Machines as every caller uses them (MCP tools, CLI, VS Code), wherever they live: behind a
 * server (the local one, or hosted ForeverVM, over HTTP) or in this process (the local server's
 * own MCP endpoints). Failures are ForeverVMErrors; what a backend cannot do at all is an
 * UnsupportedByBackendError.
 */
export interface PerennialClient {
  whoami(): Promise<{ account: string }>;
  /** The local server's status; hosted ForeverVM has none. */
  status(): Promise<StatusReport>;
  create(options?: NewMachineOptions): Promise<MachineInfo>;
  /** Machines carrying every given tag, newest first. */
  list(tags?: Record<string, string>): Promise<MachineInfo[]>;
  get(name: string): Promise<MachineInfo>;
  delete(name: string): Promise<void>;
  /** Runs code and waits for its result, streaming output; a machine's instructions run in turn. */
  run(name: string, code: string, options?: RunOptions): Promise<{ seq: number; result: ExecResult }>;
  /** Instruction `seq`'s result, waiting while it runs; kept as long as the machine's history. */
  result(name: string, seq: number): Promise<ExecResult>;
  /**
   * Instruction `seq`'s output from its first chunk (while it is recent), then as it comes; resolves
   * with its result, or rejects when `signal` aborts first (the instruction runs on).
   */
  follow(name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult>;
  /** Stops the running instruction and cancels what waits; the state is kept. */
  interrupt(name: string): Promise<InterruptResult>;
  /** Swaps the machine out to disk now. */
  swap(name: string): Promise<MachineInfo>;
  variables(name: string): Promise<VariableSummary[]>;
  variable(name: string, variable: string): Promise<VariableDetail>;
  /** The instructions the machine ran, oldest first (the last `last`). */
  history(name: string, last?: number): Promise<HistoryEntry[]>;
  /** Pyodide packages for sandbox machines, pip for python ones; answers what was installed. */
  installPackages(name: string, packages: string[]): Promise<string>;
  /** A folder inside the machine (its working directory when `path` is empty). */
  listFiles(name: string, path?: string): Promise<FileListing>;
  readFile(name: string, path: string): Promise<FileContent>;
  writeFile(name: string, path: string, content: string, encoding?: 'utf8' | 'base64'): Promise<WrittenFile>;
  /** A new machine with this one's state now; its tags plus `forked_from` and `tags`. */
  fork(name: string, options?: { tags?: Record<string, string> }): Promise<MachineInfo>;
  /** Takes a checkpoint of the machine's state now. */
  checkpoint(name: string, label?: string): Promise<CheckpointInfo>;
  /** The machine's checkpoints, oldest first: named ones, and the newest automatic ones. */
  checkpoints(name: string): Promise<CheckpointInfo[]>;
  deleteCheckpoint(name: string, checkpoint: string): Promise<void>;
  /** Returns the machine to a checkpoint (by id or label); what runs is interrupted first. */
  rollback(name: string, checkpoint: string): Promise<RollbackResult>;
  /**
   * Moves a machine made on an older runtime (a sandbox machine on an older Pyodide) onto the
   * newest one, keeping a checkpoint of the state it leaves to roll back to.
   */
  upgrade(name: string): Promise<UpgradeResult>;
  /** Clears the namespace (every variable, function, import); files and packages stay. */
  reset(name: string): Promise<ResetResult>;
  /** Type, signature and docstring of a variable or a dotted path from one; nothing is called. */
  inspect(name: string, expression: string): Promise<ObjectInfo>;
  /** Whether `code` is a whole statement, for an interactive prompt. */
  isComplete(name: string, code: string): Promise<Completeness>;
  /** What the name before `cursor` (a UTF-16 offset; the end by default) can become, from the machine's namespace. */
  complete(name: string, code: string, cursor?: number): Promise<Completions>;
  /** Calls `onEvent` for every change to the machines until `signal` aborts or the stream ends. */
  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void>;
  /** Lets go of connections; machines are not touched. */
  close(): Promise<void>;
}
