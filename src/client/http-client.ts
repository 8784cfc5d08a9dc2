import { LONGEST_TIMEOUT_SECONDS, base64Content, newMachineBody, type FileEncoding, type NewMachineOptions } from '../shared/requests.ts';
import type {
  Completeness,
  Completions,
  ForeverVMMachine,
  ExecResult,
  HistoryEntry,
  InterruptResult,
  MachineEvent,
  MachineInfo,
  OutputChunk,
  StatusReport,
  WrittenFile,
} from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { ForeverVMClient, type ForeverVMClientOptions } from './forevervm-client.ts';
import { ForeverVMEmulation } from './forevervm-emulation.ts';
import { UnsupportedByBackendError, type PerennialClient, type RunOptions } from '../shared/perennial-client.ts';
import { ReplConnection } from './repl-connection.ts';

/** A machine's WebSocket REPL is closed after this long without an instruction. */
const REPL_IDLE_MS = 60_000;

interface OpenRepl {
  connection: Promise<ReplConnection>;
  running: number;
  idle?: NodeJS.Timeout;
}

/**
 * Machines behind a server, over HTTP and WebSocket: the local server, or hosted ForeverVM.
 * Instructions go over each machine's WebSocket REPL (the fastest path), kept open while it is
 * used. Where the backend lacks a Perennial extension (hosted ForeverVM), this is the one place
 * that does with what the protocol has.
 */
export class HttpClient implements PerennialClient {
  readonly #wire: ForeverVMClient;
  readonly #emulation: ForeverVMEmulation;
  readonly #repls = new Map<string, OpenRepl>();
  /** Whether an extension has answered: the backend keeps a history of its own, and none is recorded here. */
  #extended = false;

  constructor(options: ForeverVMClientOptions) {
    this.#wire = new ForeverVMClient(options);
    this.#emulation = new ForeverVMEmulation(this.#wire);
  }

  get baseUrl(): string {
    return this.#wire.baseUrl;
  }

  whoami(): Promise<{ account: string }> {
    return this.#wire.whoami();
  }

  status(): Promise<StatusReport> {
    return this.#native(() => this.#wire.status());
  }

  async create(options: NewMachineOptions = {}): Promise<MachineInfo> {
    const name = await this.#wire.createMachine(newMachineBody(options));
    const info = await this.#or(
      () => this.#wire.machine(name),
      async () =>
        fromListing({ name, created_at: new Date().toISOString(), running: true, has_pending_instruction: false, expires_at: null, tags: options.tags ?? {} }),
    );
    // Hosted ForeverVM names its machines itself.
    if (options.name && name !== options.name) info.warnings.push(`This backend names machines itself: the new machine is ${name}, not ${options.name}.`);
    return info;
  }

  list(tags?: Record<string, string>): Promise<MachineInfo[]> {
    return this.#or(
      () => this.#wire.machines(tags),
      async () => {
        const [first, ...rest] = await this.#wire.listMachines(tags);
        if (!first) return [];
        // A server of an older Perennial has each machine's details, only not the listing of them all.
        const details = (machine: ForeverVMMachine) => this.#wire.machine(machine.name);
        const head = await details(first).catch((error: unknown) => (error instanceof UnsupportedByBackendError ? undefined : fromListing(first)));
        if (!head) return [first, ...rest].map(fromListing);
        return [head, ...(await Promise.all(rest.map((machine) => details(machine).catch(() => fromListing(machine)))))];
      },
    );
  }

  get(name: string): Promise<MachineInfo> {
    return this.#or(
      () => this.#wire.machine(name),
      async () => {
        const listed = (await this.#wire.listMachines()).find((machine) => machine.name === name);
        if (!listed) throw new ForeverVMError(404, 'MachineNotFound', `Machine ${name} does not exist`, name);
        return fromListing(listed);
      },
    );
  }

  async delete(name: string): Promise<void> {
    await this.#native(() => this.#wire.deleteMachine(name));
    this.#closeRepl(name);
  }

  /** Over the machine's WebSocket REPL; over HTTP when it must interrupt first. */
  async run(name: string, code: string, given: RunOptions = {}) {
    // Hosted ForeverVM has no "no limit" (0, Perennial's): it gets the longest Perennial allows.
    const unlimited = given.timeoutSeconds === 0 && !(await this.#wire.extended());
    const options = unlimited ? { ...given, timeoutSeconds: LONGEST_TIMEOUT_SECONDS } : given;
    const onOutput = options.onOutput ?? (() => {});
    const startedAt = new Date().toISOString();
    let ran;
    if (options.interrupt) {
      const { instruction_seq: seq } = await this.#wire.exec(name, code, { timeoutSeconds: options.timeoutSeconds, interrupt: true });
      ran = { seq, result: await this.#wire.streamResult(name, seq, onOutput) };
    } else {
      ran = await this.#onRepl(name, (repl) => repl.exec(code, onOutput, options.timeoutSeconds, options));
    }
    if (!this.#extended) this.#emulation.record(name, { seq: ran.seq, code, startedAt, result: ran.result });
    return ran;
  }

  result(name: string, seq: number): Promise<ExecResult> {
    return this.#wire.result(name, seq);
  }

  follow(name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult> {
    return this.#wire.streamResult(name, seq, onOutput, signal);
  }

  interrupt(name: string): Promise<InterruptResult> {
    return this.#or(
      () => this.#wire.interrupt(name),
      async () => {
        // ForeverVM's own way: an instruction that interrupts whatever runs before it.
        const { interrupted } = await this.#wire.exec(name, 'pass', { interrupt: true });
        return { cancelled: 0, interrupted: interrupted ?? false };
      },
    );
  }

  swap(name: string): Promise<MachineInfo> {
    return this.#native(() => this.#wire.swap(name));
  }

  variables(name: string) {
    return this.#or(
      () => this.#wire.variables(name),
      () => this.#emulation.variables(name),
    );
  }

  variable(name: string, variable: string) {
    return this.#or(
      () => this.#wire.variable(name, variable),
      () => this.#emulation.variable(name, variable),
    );
  }

  history(name: string, last?: number): Promise<HistoryEntry[]> {
    return this.#or(
      () => this.#wire.history(name, last),
      async () => this.#emulation.history(name, last),
    );
  }

  installPackages(name: string, packages: string[]): Promise<string> {
    return this.#native(() => this.#wire.installPackages(name, packages));
  }

  listFiles(name: string, path = '') {
    return this.#or(
      () => this.#wire.listFiles(name, path),
      () => this.#emulation.listFiles(name, path),
    );
  }

  readFile(name: string, path: string) {
    return this.#or(
      () => this.#wire.readFile(name, path),
      () => this.#emulation.readFile(name, path),
    );
  }

  writeFile(name: string, path: string, content: string, encoding: FileEncoding = 'utf8'): Promise<WrittenFile> {
    return this.#or(
      () => this.#wire.writeFile(name, path, content, encoding),
      () => this.#emulation.writeFile(name, path, base64Content(content, encoding)),
    );
  }

  fork(name: string, options: { tags?: Record<string, string> } = {}) {
    return this.#native(() => this.#wire.fork(name, options));
  }

  checkpoint(name: string, label?: string) {
    return this.#native(() => this.#wire.checkpoint(name, label));
  }

  checkpoints(name: string) {
    return this.#native(() => this.#wire.checkpoints(name));
  }

  deleteCheckpoint(name: string, checkpoint: string) {
    return this.#native(() => this.#wire.deleteCheckpoint(name, checkpoint));
  }

  rollback(name: string, checkpoint: string) {
    return this.#native(() => this.#wire.rollback(name, checkpoint));
  }

  upgrade(name: string) {
    return this.#native(() => this.#wire.upgrade(name));
  }

  reset(name: string) {
    return this.#or(
      () => this.#wire.reset(name),
      () => this.#emulation.reset(name),
    );
  }

  inspect(name: string, expression: string) {
    return this.#or(
      () => this.#wire.inspect(name, expression),
      () => this.#emulation.inspect(name, expression),
    );
  }

  isComplete(name: string, code: string): Promise<Completeness> {
    return this.#or(
      () => this.#wire.isComplete(name, code),
      async () => this.#emulation.isComplete(code),
    );
  }

  complete(name: string, code: string, cursor?: number): Promise<Completions> {
    return this.#native(() => this.#wire.complete(name, code, cursor));
  }

  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void> {
    return this.#native(() => this.#wire.events(onEvent, signal));
  }

  async close(): Promise<void> {
    for (const name of [...this.#repls.keys()]) this.#closeRepl(name);
  }

  // ---- internals ------------------------------------------------------------------------------

  /** A Perennial extension, or UnsupportedByBackendError. */
  async #native<T>(extension: () => Promise<T>): Promise<T> {
    const answer = await extension();
    if (!this.#extended) {
      this.#extended = true;
      this.#emulation.forgetRecords();
    }
    return answer;
  }

  /**
   * A Perennial extension, or what the ForeverVM protocol offers instead where the server lacks
   * it (which the wire layer learns once, and then answers without asking).
   */
  async #or<T>(extension: () => Promise<T>, fallback: () => Promise<T>): Promise<T> {
    try {
      return await this.#native(extension);
    } catch (error) {
      if (!(error instanceof UnsupportedByBackendError)) throw error;
      return fallback();
    }
  }

  /** Uses the machine's REPL, opening it if needed; it closes after a while unused. */
  async #onRepl<T>(name: string, task: (repl: ReplConnection) => Promise<T>): Promise<T> {
    let repl = this.#repls.get(name);
    if (!repl) {
      const opened: OpenRepl = { connection: ReplConnection.open(this.#wire, name), running: 0 };
      opened.connection.catch(() => this.#repls.get(name) === opened && this.#repls.delete(name));
      this.#repls.set(name, opened);
      repl = opened;
    }
    const entry = repl;
    clearTimeout(entry.idle);
    entry.running++;
    try {
      return await task(await entry.connection);
    } finally {
      if (--entry.running === 0 && this.#repls.get(name) === entry) {
        entry.idle = setTimeout(() => this.#closeRepl(name), REPL_IDLE_MS);
        entry.idle.unref();
      }
    }
  }

  #closeRepl(name: string): void {
    const repl = this.#repls.get(name);
    if (!repl) return;
    this.#repls.delete(name);
    clearTimeout(repl.idle);
    void repl.connection.then(
      (connection) => connection.close(),
      () => {},
    );
  }
}

/** What hosted ForeverVM's listing tells of a machine, as Perennial's details. */
function fromListing(machine: ForeverVMMachine): MachineInfo {
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
