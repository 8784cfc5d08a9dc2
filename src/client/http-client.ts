import { OperationClient, OPERATIONS, type EmulatedOperation, type OperationInput, type OperationName, type OperationResult } from '../shared/operations.ts';
import { LONGEST_TIMEOUT_SECONDS, newMachineBody, type NewMachineOptions } from '../shared/requests.ts';
import type { ExecResult, MachineEvent, MachineInfo, OutputChunk, StatusReport } from '../shared/types.ts';
import { ForeverVMClient, type ForeverVMClientOptions } from './forevervm-client.ts';
import { ForeverVMEmulation, fromListing } from './forevervm-emulation.ts';
import { UnsupportedByBackendError, type PerennialClient, type RunOptions } from '../shared/perennial-client.ts';
import { ReplConnection } from './repl-connection.ts';
import { TEAM_REQUESTS, type TeamRequestInput, type TeamRequestName, type TeamRequestResult } from '../shared/team-requests.ts';

/** A machine's WebSocket REPL is closed after this long without an instruction. */
const REPL_IDLE_MS = 60_000;

interface OpenRepl {
  connection: Promise<ReplConnection>;
  /** An instruction of this client is on it: a REPL takes one at a time. */
  busy: boolean;
  idle?: NodeJS.Timeout;
}

/**
 * Machines behind a server, over HTTP and WebSocket: the local server, or hosted ForeverVM.
 * Instructions go over each machine's WebSocket REPL (the fastest path), kept open while it is
 * used. Where the backend lacks a Perennial extension (hosted ForeverVM), this is the one place
 * that does with what the protocol has.
 */
export class HttpClient extends OperationClient implements PerennialClient {
  readonly #wire: ForeverVMClient;
  readonly #emulation: ForeverVMEmulation;
  readonly #repls = new Map<string, OpenRepl[]>();
  /** Whether an extension has answered: the backend keeps a history of its own, and none is recorded here. */
  #extended = false;

  constructor(options: ForeverVMClientOptions) {
    super();
    this.#wire = new ForeverVMClient(options);
    this.#emulation = new ForeverVMEmulation(this.#wire);
  }

  get baseUrl(): string {
    return this.#wire.baseUrl;
  }

  /** What it reaches the backend with: the local server's token (from its data dir), or hosted ForeverVM's. */
  get token(): string {
    return this.#wire.token;
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
      () => this.#wire.operation('get', { name }),
      async () =>
        fromListing({ name, created_at: new Date().toISOString(), running: true, has_pending_instruction: false, expires_at: null, tags: options.tags ?? {} }),
    );
    // Hosted ForeverVM names its machines itself.
    if (options.name && name !== options.name) info.warnings.push(`This backend names machines itself: the new machine is ${name}, not ${options.name}.`);
    return info;
  }

  /** Over the machine's WebSocket REPL; over HTTP when it must interrupt first. */
  async run(name: string, code: string, options: RunOptions = {}) {
    const startedAt = new Date().toISOString();
    if (options.interrupt) {
      const seq = await this.#exec(name, code, options.timeoutSeconds, true);
      options.onQueued?.(seq);
      return this.#recorded(name, code, startedAt, { seq, result: await this.#wire.streamResult(name, seq, options.onOutput ?? (() => {})) });
    }
    const timeoutSeconds = await this.#timeout(options.timeoutSeconds);
    return this.#recorded(name, code, startedAt, await this.#onRepl(name, (repl) => repl.exec(code, options.onOutput ?? (() => {}), timeoutSeconds, options)));
  }

  async start(name: string, code: string, options: { timeoutSeconds?: number } = {}): Promise<number> {
    const startedAt = new Date().toISOString();
    const seq = await this.#exec(name, code, options.timeoutSeconds, false);
    // Nobody here waits for its result: without extensions, it is recorded once it comes.
    if (!this.#extended)
      void this.#wire.result(name, seq).then(
        (result) => this.#recorded(name, code, startedAt, { seq, result }),
        () => {},
      );
    return seq;
  }

  /** Queues an instruction over the exec endpoint. */
  async #exec(name: string, code: string, timeoutSeconds: number | undefined, interrupt: boolean): Promise<number> {
    return (await this.#wire.exec(name, code, { timeoutSeconds: await this.#timeout(timeoutSeconds), interrupt })).instruction_seq;
  }

  /** `ran`, kept for `history` by a backend without a history of its own. */
  #recorded(name: string, code: string, startedAt: string, ran: { seq: number; result: ExecResult }): { seq: number; result: ExecResult } {
    if (!this.#extended) this.#emulation.record(name, { ...ran, code, startedAt });
    return ran;
  }

  /** Hosted ForeverVM has no "no limit" (0, Perennial's): it gets the longest Perennial allows. */
  async #timeout(timeoutSeconds: number | undefined): Promise<number | undefined> {
    return timeoutSeconds === 0 && !(await this.#wire.extended()) ? LONGEST_TIMEOUT_SECONDS : timeoutSeconds;
  }

  result(name: string, seq: number): Promise<ExecResult> {
    return this.#wire.result(name, seq);
  }

  follow(name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult> {
    return this.#wire.streamResult(name, seq, onOutput, signal);
  }

  /** An operation of the table: the server's, or where the backend lacks it, what the ForeverVM protocol offers instead. */
  protected async carry<K extends OperationName>(op: K, request: OperationInput<K>): Promise<OperationResult<K>> {
    const hosted =
      OPERATIONS[op].hosted === 'emulated'
        ? (this.#emulation.operations[op as EmulatedOperation] as (request: OperationInput<K>) => Promise<OperationResult<K>>)
        : undefined;
    const extension = () => this.#wire.operation(op, request);
    const answer = hosted ? await this.#or(extension, () => hosted(request)) : await this.#native(extension);
    if (op === 'delete') this.#closeRepls((request as OperationInput<'delete'>).name);
    return answer;
  }

  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void> {
    return this.#native(() => this.#wire.events(onEvent, signal));
  }

  /** One of the team's requests (`team-requests.ts`): a team's server answers them. */
  team<K extends TeamRequestName>(name: K, request: TeamRequestInput<K>): Promise<TeamRequestResult<K>> {
    return this.#native(() => this.#wire.call(TEAM_REQUESTS[name], request) as Promise<TeamRequestResult<K>>);
  }

  async close(): Promise<void> {
    for (const name of [...this.#repls.keys()]) this.#closeRepls(name);
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

  /**
   * Uses an idle REPL of the machine, opening one if none is: an instruction is sent at once, so
   * that the machine numbers it while an earlier one of this client still runs. A REPL closes
   * after a while unused.
   */
  async #onRepl<T>(name: string, task: (repl: ReplConnection) => Promise<T>): Promise<T> {
    const repls = this.#repls.get(name) ?? [];
    this.#repls.set(name, repls);
    let entry = repls.find((repl) => !repl.busy);
    if (!entry) {
      const opened: OpenRepl = { connection: ReplConnection.open(this.#wire, name), busy: false };
      opened.connection.catch(() => this.#dropRepl(name, opened));
      repls.push(opened);
      entry = opened;
    }
    const used = entry;
    clearTimeout(used.idle);
    used.busy = true;
    try {
      return await task(await used.connection);
    } finally {
      used.busy = false;
      if (repls.includes(used)) {
        used.idle = setTimeout(() => this.#dropRepl(name, used), REPL_IDLE_MS);
        used.idle.unref();
      }
    }
  }

  #dropRepl(name: string, repl: OpenRepl): void {
    const repls = this.#repls.get(name);
    if (!repls?.includes(repl)) return;
    repls.splice(repls.indexOf(repl), 1);
    if (!repls.length) this.#repls.delete(name);
    clearTimeout(repl.idle);
    void repl.connection.then(
      (connection) => connection.close(),
      () => {},
    );
  }

  #closeRepls(name: string): void {
    for (const repl of [...(this.#repls.get(name) ?? [])]) this.#dropRepl(name, repl);
  }
}
