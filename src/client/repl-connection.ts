import { WebSocket } from 'ws';
import type { RunOptions } from '../shared/perennial-client.ts';
import type { ExecResult, OutputChunk, ReplServerMessage } from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { ForeverVMClient } from './forevervm-client.ts';

/** What an instruction's sender hears besides its output. */
type ReplSender = Pick<RunOptions, 'onInput' | 'onDisplay' | 'onQueued'>;

/** Reconnection backoff: from the first delay, doubling up to the longest, for this many tries. */
const BACKOFF = { firstMs: 100, longestMs: 5000, tries: 12 };

interface Pending {
  code: string;
  timeoutSeconds?: number;
  onOutput(chunk: OutputChunk): void;
  /** Answers the instruction's `input()` (the server asks only when it is there), sees its displays as they come, and learns its number. */
  sender: ReplSender;
  /** Its open questions, to give up when the server says the instruction ended. */
  questions: Map<number, AbortController>;
  resolve(value: { seq: number; result: ExecResult }): void;
  reject(error: Error): void;
  /** Known once the server acknowledged the instruction. */
  seq?: number;
  /** Why the server refused it, when it said so before its error frame. */
  refusal?: string;
}

/**
 * The WebSocket REPL of one machine (`/v1/machine/{name}/repl`), one instruction at a time, as
 * ForeverVM's clients use it. When the connection drops it reconnects to the same machine with
 * exponential backoff; an instruction the server had acknowledged is then awaited by its seq
 * over HTTP (it ran or runs on), one it had not is sent again.
 */
export class ReplConnection {
  #socket?: WebSocket;
  #requestId = 0;
  #pending?: Pending;
  #queue: Pending[] = [];
  #closed = false;

  private constructor(
    private readonly client: ForeverVMClient,
    readonly machine: string,
  ) {}

  /** Opens the REPL of `machine` (an existing machine's name). */
  static async open(client: ForeverVMClient, machine: string): Promise<ReplConnection> {
    const connection = new ReplConnection(client, machine);
    await connection.#connect();
    return connection;
  }

  /** Runs code on the machine, streaming its output to `onOutput` and the rest to `sender`; instructions wait their turn. */
  exec(
    code: string,
    onOutput: (chunk: OutputChunk) => void = () => {},
    timeoutSeconds?: number,
    sender: ReplSender = {},
  ): Promise<{ seq: number; result: ExecResult }> {
    if (this.#closed) return Promise.reject(new ForeverVMError(0, 'Closed', 'The REPL connection is closed'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ code, timeoutSeconds, onOutput, sender, questions: new Map(), resolve, reject });
      this.#next();
    });
  }

  close(): void {
    this.#closed = true;
    this.#socket?.close();
    for (const waiting of [this.#pending, ...this.#queue.splice(0)]) waiting?.reject(new ForeverVMError(0, 'Closed', 'The REPL connection was closed'));
    this.#pending = undefined;
  }

  #next(): void {
    if (this.#pending || !this.#queue.length || this.#socket?.readyState !== WebSocket.OPEN) return;
    this.#pending = this.#queue.shift()!;
    this.#send(this.#pending);
  }

  #send(pending: Pending): void {
    const instruction = { code: pending.code, ...(pending.timeoutSeconds !== undefined ? { timeout_seconds: pending.timeoutSeconds } : {}) };
    const { onInput, onDisplay } = pending.sender;
    const extensions = { ...(onInput ? { input: true } : {}), ...(onDisplay ? { displays: true } : {}) };
    this.#socket!.send(JSON.stringify({ type: 'exec', instruction, request_id: this.#requestId++, ...extensions }));
  }

  #connect(): Promise<void> {
    return new Promise((resolve, reject) => {
      const url = `${this.client.baseUrl.replace(/^http/, 'ws')}/v1/machine/${encodeURIComponent(this.machine)}/repl`;
      const socket = new WebSocket(url, { headers: { authorization: `Bearer ${this.client.token}`, 'x-forevervm-sdk': 'javascript', ...this.client.headers } });
      let connected = false;
      let refusal: ForeverVMError | undefined;
      socket.on('message', (data) => {
        const message = JSON.parse(data.toString()) as ReplServerMessage;
        if (!connected && message.type === 'error') {
          // Refused before connecting (no such machine): the close that follows carries this.
          const status = message.code === 'MachineNotFound' ? 404 : 400;
          refusal = new ForeverVMError(
            status,
            message.code,
            message.message ??
              (message.code === 'MachineNotFound'
                ? `Machine ${this.machine} does not exist (it may have been deleted)`
                : `The server refused the REPL (${message.code})`),
            message.id,
          );
          return;
        }
        if (message.type === 'connected') {
          connected = true;
          this.#socket = socket;
          resolve();
          this.#resume();
          return;
        }
        this.#onMessage(message);
      });
      socket.on('error', (error) => {
        if (!connected) reject(new ForeverVMError(0, 'Unreachable', `Cannot open the REPL of ${this.machine}: ${error.message}`));
      });
      socket.on('close', () => {
        if (!connected) {
          reject(refusal ?? new ForeverVMError(0, 'Unreachable', `The REPL of ${this.machine} closed before it connected`));
          return;
        }
        this.#socket = undefined;
        if (!this.#closed) void this.#reconnect();
      });
    });
  }

  async #reconnect(): Promise<void> {
    let delay = BACKOFF.firstMs;
    for (let attempt = 0; attempt < BACKOFF.tries && !this.#closed; attempt++) {
      await new Promise((r) => setTimeout(r, delay));
      try {
        await this.#connect();
        return;
      } catch {
        delay = Math.min(delay * 2, BACKOFF.longestMs);
        // The server may be back elsewhere (another port after a restart).
        await this.client.refresh().catch(() => false);
      }
    }
    this.close();
  }

  /** After a reconnect: the acknowledged instruction is awaited over HTTP, any other sent again. */
  #resume(): void {
    const pending = this.#pending;
    if (!pending) return this.#next();
    if (pending.seq === undefined) return this.#send(pending);
    this.#pending = undefined;
    this.client.result(this.machine, pending.seq).then(
      (result) => pending.resolve({ seq: pending.seq!, result }),
      (error: Error) => pending.reject(error),
    );
    this.#next();
  }

  async #answer(pending: Pending, { instruction_id, n, type: _type, ...request }: Extract<ReplServerMessage, { type: 'input_request' }>): Promise<void> {
    const question = new AbortController();
    pending.questions.set(n, question);
    let reply: { value: string } | { error: string };
    try {
      if (!pending.sender.onInput) throw new Error('this client sent the cell without a way to answer');
      reply = { value: await pending.sender.onInput(request, question.signal) };
    } catch (error) {
      reply = { error: (error as Error).message };
    } finally {
      pending.questions.delete(n);
    }
    if (!question.signal.aborted) this.#socket?.send(JSON.stringify({ type: 'input_reply', instruction_id, n, ...reply }));
  }

  #onMessage(message: ReplServerMessage): void {
    const pending = this.#pending;
    if (!pending) return;
    if (message.type === 'exec_received') {
      pending.seq = message.seq;
      pending.sender.onQueued?.(message.seq);
    } else if (message.type === 'output') pending.onOutput(message.chunk);
    else if (message.type === 'input_request') void this.#answer(pending, message);
    else if (message.type === 'input_cancel') pending.questions.get(message.n)?.abort();
    else if (message.type === 'display') pending.sender.onDisplay?.(message.entry);
    else if (message.type === 'message' && message.level === 'error') pending.refusal = message.message;
    else if (message.type === 'result') {
      this.#pending = undefined;
      pending.resolve({ seq: message.instruction_id, result: message.result });
      this.#next();
    } else if (message.type === 'error') {
      this.#pending = undefined;
      const why = pending.refusal ? `: ${pending.refusal}` : ` (${message.code})`;
      pending.reject(new ForeverVMError(400, message.code, `The server refused the instruction${why}`, message.id));
      this.#next();
    }
  }
}
