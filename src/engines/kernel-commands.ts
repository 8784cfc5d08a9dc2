import type { FrontEndComm } from '../shared/requests.ts';
import type {
  CommDelivery,
  Completeness,
  Completions,
  FileContent,
  FileListing,
  ObjectInfo,
  ResetResult,
  VariableDetail,
  VariableSummary,
  WrittenFile,
} from '../shared/types.ts';

/**
 * The kernel's commands that every engine passes straight through (`command_handlers` in
 * perennial_kernel/commands.py), each with its arguments and its answer. A new command is added in the
 * kernel, here, and where it is used; the engines and the machine manager carry it as it is.
 */
export interface KernelCommands {
  variables: { args: Record<string, never>; result: VariableSummary[] };
  variable: { args: { name: string }; result: VariableDetail };
  /** `cursor` counts code points, as Python strings do. */
  complete: { args: { code: string; cursor: number }; result: Completions };
  inspect: { args: { expr: string }; result: ObjectInfo };
  is_complete: { args: { code: string }; result: Completeness };
  /** IPython's shell started now, as a Jupyter kernel's is, where the machine has IPython. */
  start_ipython: { args: Record<string, never>; result: { available: boolean } };
  /** A fresh namespace; files and packages stay. */
  reset: { args: Record<string, never>; result: ResetResult };
  /** A front end's comm message, handled by its comm's code (which may change the state). */
  comm: { args: { message: FrontEndComm }; result: CommDelivery };
  /** A folder inside the machine; its working directory when `path` is empty. */
  list_files: { args: { path: string }; result: FileListing };
  /** At most `limit` bytes; a larger file is an error. */
  read_file: { args: { path: string; limit: number }; result: FileContent };
  /** `content` is base64. */
  write_file: { args: { path: string; content: string }; result: WrittenFile };
}

export type KernelOp = keyof KernelCommands;
export type KernelArgs<Op extends KernelOp> = KernelCommands[Op]['args'];
export type KernelResult<Op extends KernelOp> = KernelCommands[Op]['result'];

/** The commands after which the machine has something new to save. */
const CHANGES_STATE: ReadonlySet<KernelOp> = new Set<KernelOp>(['write_file', 'reset', 'comm', 'start_ipython']);

export function changesState(op: KernelOp): boolean {
  return CHANGES_STATE.has(op);
}
