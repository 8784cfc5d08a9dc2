import type { NewMachineOptions } from './requests.ts';
import type { OperationCalls } from './operations.ts';
import type { ExecResult, MachineEvent, MachineInfo, OutputChunk, SenderListeners, StatusReport } from './types.ts';
import { CodedError } from '../platform/coded-error.ts';

/** An `interrupt` run neither asks nor shows displays as they come: it goes over plain HTTP. */
export interface RunOptions extends SenderListeners {
  timeoutSeconds?: number;
  /** Stop whatever is pending or running on the machine first. */
  interrupt?: boolean;
  /** Called for each output line while the instruction runs. */
  onOutput?: (chunk: OutputChunk) => void;
  /** Called once the machine holds the instruction, with its number (before anything queued ahead of it ends). */
  onQueued?: (seq: number) => void;
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
 * own MCP endpoints). The operations of `OPERATIONS` (shared/operations.ts) are its methods, with
 * what the ForeverVM protocol itself does and what streams. Failures are ForeverVMErrors; what a
 * backend cannot do at all is an UnsupportedByBackendError.
 */
export interface PerennialClient extends OperationCalls {
  whoami(): Promise<{ account: string }>;
  /** The local server's status; hosted ForeverVM has none. */
  status(): Promise<StatusReport>;
  create(options?: NewMachineOptions): Promise<MachineInfo>;
  /** Runs code and waits for its result, streaming output; a machine's instructions run in turn. */
  run(name: string, code: string, options?: RunOptions): Promise<{ seq: number; result: ExecResult }>;
  /**
   * Queues code as an instruction and answers its number at once, without waiting for anything
   * before it; `follow` and `result` give its output and result. It cannot ask (`input()` gets
   * an EOFError), as over ForeverVM's exec endpoint.
   */
  start(name: string, code: string, options?: { timeoutSeconds?: number }): Promise<number>;
  /** Instruction `seq`'s result, waiting while it runs; kept as long as the machine's history. */
  result(name: string, seq: number): Promise<ExecResult>;
  /**
   * Instruction `seq`'s output from its first chunk (while it is recent), then as it comes; resolves
   * with its result, or rejects when `signal` aborts first (the instruction runs on).
   */
  follow(name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult>;
  /** Calls `onEvent` for every change to the machines until `signal` aborts or the stream ends. */
  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void>;
  /** Lets go of connections; machines are not touched. */
  close(): Promise<void>;
}
