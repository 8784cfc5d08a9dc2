import { tagsOf, type EmulatedOperation, type OperationInput, type OperationResult } from '../shared/operations.ts';
import { UnsupportedByBackendError } from '../shared/perennial-client.ts';
import { base64Content, MAX_FILE_BYTES } from '../shared/requests.ts';
import { readKernelPackage } from '../kernel/kernel-package.ts';
import type { Completeness, ExecResult, ForeverVMMachine, HistoryEntry, MachineInfo } from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { ForeverVMClient } from './forevervm-client.ts';

/** Instructions kept per machine for a backend without a history of its own. */
const RECORDED_INSTRUCTIONS = 200;

/** The kernel's modules a hosted machine answers with, dependencies first (`hosted.py`). */
const HOSTED_MODULES = ['output', 'files', 'introspection'];

/**
 * An instruction that runs kernel `command` on a hosted machine, with the kernel's own code
 * (`perennial_kernel/hosted.py`), and prints its answer as one JSON line. It leaves no name in the
 * machine's globals, and its value is None.
 */
function hostedCommand(command: string, message: Record<string, unknown> = {}): string {
  const { files } = readKernelPackage();
  const modules = Object.fromEntries(HOSTED_MODULES.map((name) => [name, files[`${name}.py`]]));
  // A JSON string is a Python string literal too.
  const request = JSON.stringify(JSON.stringify({ command, message, modules }));
  return `(lambda scope: exec(${JSON.stringify(files['hosted.py'])}, scope) or scope["answer"](globals(), ${request}))({"__name__": "_perennial_hosted"})`;
}

/** What a backend without an operation does instead: for exactly the operations the table says it can. */
export type HostedOperations = { [K in EmulatedOperation]: (request: OperationInput<K>) => Promise<OperationResult<K>> };

/**
 * Perennial's extensions for a backend that has only the ForeverVM protocol (hosted ForeverVM):
 * the same answers from a short instruction on the machine, from the protocol's own calls, from
 * this client's own record of the instructions it ran, or from a judgement made here. The
 * operations not in `operations` it cannot do.
 */
export class ForeverVMEmulation {
  readonly #record = new Map<string, HistoryEntry[]>();
  readonly operations: HostedOperations;

  constructor(private readonly wire: ForeverVMClient) {
    this.operations = {
      list: async ({ tag }) => {
        const [first, ...rest] = await wire.listMachines(tag?.length ? tagsOf(tag) : undefined);
        if (!first) return [];
        // A server of an older Perennial has each machine's details, only not the listing of them all.
        const details = (machine: ForeverVMMachine) => wire.get(machine.name);
        const head = await details(first).catch((error: unknown) => (error instanceof UnsupportedByBackendError ? undefined : fromListing(first)));
        if (!head) return [first, ...rest].map(fromListing);
        return [head, ...(await Promise.all(rest.map((machine) => details(machine).catch(() => fromListing(machine)))))];
      },
      get: async ({ name }) => {
        const listed = (await wire.listMachines()).find((machine) => machine.name === name);
        if (!listed) throw new ForeverVMError(404, 'MachineNotFound', `Machine ${name} does not exist`, name);
        return fromListing(listed);
      },
      interrupt: async ({ name }) => {
        // ForeverVM's own way: an instruction that interrupts whatever runs before it.
        const { interrupted } = await wire.exec(name, 'pass', { interrupt: true });
        return { cancelled: 0, interrupted: interrupted ?? false };
      },
      history: async ({ name, last }) => {
        const entries = this.#record.get(name) ?? [];
        return last ? entries.slice(-Number(last)) : entries;
      },
      variables: ({ name }) => this.#answer(name, hostedCommand('variables')),
      variable: ({ name, variable }) => this.#answer(name, hostedCommand('variable', { name: variable })),
      reset: ({ name }) => this.#answer(name, hostedCommand('reset')),
      inspect: ({ name, expression }) => this.#answer(name, hostedCommand('inspect', { expr: expression })),
      listFiles: ({ name, path }) => this.#answer(name, hostedCommand('list_files', { path: path ?? '' })),
      readFile: ({ name, path }) => this.#answer(name, hostedCommand('read_file', { path, limit: MAX_FILE_BYTES })),
      writeFile: ({ name, path, content, encoding }) =>
        this.#answer(name, hostedCommand('write_file', { path, content: base64Content(content, encoding ?? 'utf8') })),
      isComplete: async ({ code }) => this.isComplete(code),
    };
  }

  /** Keeps an instruction this client ran, for `history`. */
  record(machine: string, entry: HistoryEntry): void {
    const entries = this.#record.get(machine) ?? [];
    entries.push(entry);
    this.#record.set(machine, entries.slice(-RECORDED_INSTRUCTIONS));
  }

  /** Stops recording: the backend keeps a history of its own. */
  forgetRecords(): void {
    this.#record.clear();
  }

  /**
   * Without the kernel's judgement: a block opener or an open bracket asks for more, and a block
   * ends at an empty line, as in Python's own prompt.
   */
  isComplete(code: string): Completeness {
    const lines = code.split('\n');
    const last = lines.at(-1) ?? '';
    if (lines.length > 1 && last.trim() === '') return 'complete';
    const depth = [...code].reduce((d, c) => d + ('([{'.includes(c) ? 1 : ')]}'.includes(c) ? -1 : 0), 0);
    if (depth > 0 || /[:\\]\s*$/.test(last)) return 'incomplete';
    return lines.length > 1 ? 'incomplete' : 'complete';
  }

  /** Runs a snippet and reads the JSON line it prints. */
  async #answer<T>(machine: string, code: string): Promise<T> {
    const lines: string[] = [];
    const { instruction_seq: seq } = await this.wire.exec(machine, code, { timeoutSeconds: 30 });
    const result: ExecResult = await this.wire.streamResult(machine, seq, (chunk) => {
      if (chunk.stream === 'stdout') lines.push(chunk.data);
    });
    if ('error' in result) throw new ForeverVMError(400, 'EmulationFailed', result.error.split('\n').at(-1) ?? result.error);
    try {
      return JSON.parse(lines.join('\n')) as T;
    } catch {
      throw new ForeverVMError(502, 'EmulationFailed', 'The machine did not answer as expected');
    }
  }
}

/** What hosted ForeverVM's listing tells of a machine, as Perennial's details. */
export function fromListing(machine: ForeverVMMachine): MachineInfo {
  return {
    name: machine.name,
    createdAt: machine.created_at,
    tags: machine.tags,
    engine: 'forevervm',
    runtime: null,
    upgradeTo: null,
    memoryMb: 0,
    state: machine.running ? (machine.has_pending_instruction ? 'busy' : 'warm') : 'swapped',
    nextSeq: 0,
    pendingInstructions: machine.has_pending_instruction ? 1 : 0,
    lastUsedAt: machine.created_at,
    snapshot: null,
    warnings: [],
  };
}
