import type { EngineName, ExecResult, MachineInfo, OutputChunk } from './types.ts';

export interface NewMachineOptions {
  engine?: EngineName;
  tags?: Record<string, string>;
  memoryMb?: number;
  /** python engine: the interpreter. */
  python?: string;
  /** sandbox engine: a host folder mounted at /workspace (read-only unless `workspaceWritable`). */
  workspace?: string;
  workspaceWritable?: boolean;
  /** sandbox engine: let the machine reach the network. */
  network?: boolean;
}

export interface RunOptions {
  timeoutSeconds?: number;
  /** Stop whatever is pending or running on the machine first. */
  interrupt?: boolean;
  /** Called for each output line while the instruction runs. */
  onOutput?: (chunk: OutputChunk) => void;
}

/**
 * What the CLI needs from wherever machines live: in this process (MachineManager) or behind a
 * server (the ForeverVM protocol client).
 */
export interface Backend {
  create(options: NewMachineOptions): Promise<MachineInfo>;
  /** Machines carrying every given tag, newest first. */
  list(tags?: Record<string, string>): Promise<MachineInfo[]>;
  run(name: string, code: string, options?: RunOptions): Promise<{ seq: number; result: ExecResult }>;
  interrupt(name: string): Promise<void>;
  /** Swaps the machine out to disk now. */
  swap(name: string): Promise<void>;
  delete(name: string): Promise<void>;
  /** Whether `code` is a whole statement, for the interactive prompt; undefined when unknown. */
  isComplete?(name: string, code: string): Promise<'complete' | 'incomplete' | 'invalid'>;
  close(): Promise<void>;
}
