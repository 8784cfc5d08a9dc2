import type { z } from 'zod';
import {
  fieldsInQuery,
  OperationClient,
  OPERATIONS,
  type HttpRoute,
  type OperationInput,
  type OperationName,
  type OperationResult,
} from '../shared/operations.ts';
import type { NewMachineBody } from '../shared/requests.ts';
import {
  KEEPALIVE_HEADER,
  type ExecResponse,
  type ExecResult,
  type ForeverVMMachine,
  type MachineEvent,
  type OutputChunk,
  type ResultResponse,
  type StatusReport,
  type StreamResultLine,
} from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { neverConnected } from '../platform/connection-errors.ts';
import { UnsupportedByBackendError } from '../shared/perennial-client.ts';

/** Result streams that break before the result are opened again this many times in a row. */
const STREAM_REOPENS = 5;

export interface ForeverVMClientOptions {
  /** e.g. `https://api.forevervm.com` or the local server's URL from server.json. */
  baseUrl: string;
  token: string;
  /**
   * Finds the server again when it cannot be reached (the local server may have stopped when
   * idle, and come back on another port). Requests retry once after it. Default: none.
   */
  refresh?: () => Promise<{ baseUrl: string; token: string }>;
  /** Sent with every request and WebSocket (a cluster's node names the person it calls for). */
  headers?: Readonly<Record<string, string>>;
}

/** The code of a long wait that fetch cut short; the waiting method asks again. */
const WAIT_CUT = 'WaitCut';

interface RequestOptions {
  body?: unknown;
  /** Default 60 s; 0 means none, and `signal` alone ends the request (long waits, streams). */
  timeoutMs?: number;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

/**
 * The ForeverVM protocol (`forevervm-api.md`) from the client side, one method per endpoint,
 * plus Perennial's extensions, the operations of the table, which throw UnsupportedByBackendError
 * where the backend lacks them. The wire layer under HttpClient: callers use that facade, not this.
 */
export class ForeverVMClient extends OperationClient {
  #baseUrl: string;
  #token: string;
  readonly #refresh?: ForeverVMClientOptions['refresh'];
  /** Sent with every request, as the options give them. */
  readonly headers: Readonly<Record<string, string>>;
  /** Extensions this server lacks, by what they do: each found once, then refused without a request. */
  readonly #lacking = new Set<string>();
  /** Whether the server has none of them (hosted ForeverVM), learned at the first one it lacks. */
  #plain?: Promise<boolean>;

  constructor(options: ForeverVMClientOptions) {
    super();
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    this.#refresh = options.refresh;
    this.headers = options.headers ?? {};
  }

  get baseUrl(): string {
    return this.#baseUrl;
  }

  /** The bearer token, for the WebSocket REPL. */
  get token(): string {
    return this.#token;
  }

  /** Finds the server again (see `refresh` in the options); false when there is no way to. */
  async refresh(): Promise<boolean> {
    if (!this.#refresh) return false;
    const found = await this.#refresh();
    this.#baseUrl = found.baseUrl.replace(/\/+$/, '');
    this.#token = found.token;
    return true;
  }

  whoami(): Promise<{ account: string }> {
    return this.#json('GET', '/v1/whoami');
  }

  async createMachine(options: z.input<typeof NewMachineBody> = {}): Promise<string> {
    return (await this.#json<{ machine_name: string }>('POST', '/v1/machine/new', { body: options })).machine_name;
  }

  async listMachines(tags?: Record<string, string>): Promise<ForeverVMMachine[]> {
    return (await this.#json<{ machines: ForeverVMMachine[] }>('POST', '/v1/machine/list', { body: tags ? { tags } : {} })).machines;
  }

  exec(machine: string, code: string, options: { timeoutSeconds?: number; interrupt?: boolean } = {}): Promise<ExecResponse> {
    return this.#json('POST', `/v1/machine/${encodeURIComponent(machine)}/exec`, {
      body: {
        instruction: { code, ...(options.timeoutSeconds !== undefined ? { timeout_seconds: options.timeoutSeconds } : {}) },
        interrupt: options.interrupt ?? false,
      },
    });
  }

  /**
   * Long-polls an instruction's result. There is no deadline of our own (an instruction may run
   * for hours); a wait that fetch gives up on (it waits 5 minutes for headers) is asked again.
   */
  async result(machine: string, seq: number): Promise<ExecResult> {
    for (;;) {
      try {
        return (await this.#json<ResultResponse>('GET', `/v1/machine/${encodeURIComponent(machine)}/exec/${seq}/result`, { timeoutMs: 0 })).result;
      } catch (error) {
        if (!(error instanceof ForeverVMError && error.code === WAIT_CUT)) throw error;
      }
    }
  }

  /**
   * Streams an instruction's output line by line, then answers its result, for as long as it
   * runs. A stream that breaks first (a proxy's idle timeout, a backend that sends nothing while
   * the code is silent) is opened again; chunks are told apart by their seq, so none repeats.
   * Aborting `signal` stops following (the instruction runs on).
   */
  async streamResult(machine: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult> {
    const path = `/v1/machine/${encodeURIComponent(machine)}/exec/${seq}/stream-result`;
    let nextChunk = 0;
    let breaks = 0;
    for (;;) {
      let cause: unknown = 'it ended before the result';
      try {
        const response = await this.#request('GET', path, { timeoutMs: 0, headers: { [KEEPALIVE_HEADER]: '1' }, signal });
        for await (const line of pieces(response, '\n')) {
          breaks = 0;
          if (!line.trim()) continue;
          const message = JSON.parse(line) as StreamResultLine;
          if (message.type === 'result') return message.result;
          if (message.chunk.seq < nextChunk) continue;
          nextChunk = message.chunk.seq + 1;
          onOutput(message.chunk);
        }
      } catch (error) {
        signal?.throwIfAborted();
        // What the server answered stands; what broke on the way (status 0) is tried again.
        if (error instanceof ForeverVMError && error.status !== 0) throw error;
        cause = error;
      }
      if (++breaks > STREAM_REOPENS) {
        if (cause instanceof ForeverVMError) throw cause;
        throw new ForeverVMError(
          502,
          'StreamEnded',
          `The result stream of instruction ${seq} kept breaking: ${cause instanceof Error ? cause.message : String(cause)}`,
        );
      }
    }
  }

  // ---- Perennial extensions -------------------------------------------------------------------

  /** Operation `op` of the table (shared/operations.ts) over HTTP: its path, then its query or body, and its answer unwrapped. */
  operation<K extends OperationName>(op: K, request: OperationInput<K>): Promise<OperationResult<K>> {
    return this.call(OPERATIONS[op], request) as Promise<OperationResult<K>>;
  }

  /** The request `route` defines (a table's: the machines' operations, the team's requests), made of `request`'s fields. */
  async call(route: HttpRoute, request: object): Promise<unknown> {
    const { method, path, field, what } = route;
    const fields: Record<string, unknown> = { ...request };
    const target = path.replace(/\{(\w+)\}/g, (_, key: string) => {
      const segment = encodeURIComponent(String(fields[key]));
      delete fields[key];
      return segment;
    });
    const rest = Object.entries(fields).filter(([, value]) => value !== undefined);
    let query = '';
    let body: unknown;
    if (fieldsInQuery(method)) {
      query = new URLSearchParams(
        rest.flatMap(([key, value]) => (Array.isArray(value) ? value : [value]).map((item): [string, string] => [key, String(item)])),
      ).toString();
    } else if (rest.length) {
      body = Object.fromEntries(rest);
    }
    const answer = await this.#extension<Record<string, unknown>>(what, method, query ? `${target}?${query}` : target, body);
    return field ? answer[field] : answer;
  }

  protected carry<K extends OperationName>(op: K, request: OperationInput<K>): Promise<OperationResult<K>> {
    return this.operation(op, request);
  }

  status(): Promise<StatusReport> {
    return this.#extension('report status', 'GET', '/v1/status');
  }

  /** Calls `onEvent` for every change to the machines until the stream ends or `signal` aborts. */
  async events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void> {
    const response = await this.#learning('stream machine events', () => this.#request('GET', '/v1/events', { timeoutMs: 0, signal }));
    // Server-sent events are separated by a blank line; only `data:` lines matter here.
    for await (const block of pieces(response, '\n\n')) {
      const data = block
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trim())
        .join('\n');
      if (data) onEvent(JSON.parse(data) as MachineEvent);
    }
  }

  // ---- internals ------------------------------------------------------------------------------

  #extension<T>(what: string, method: string, path: string, body?: unknown): Promise<T> {
    return this.#learning(what, () => this.#json<T>(method, path, { body }));
  }

  /** Whether the server has Perennial's extensions (a local server) or none (hosted ForeverVM); asked once. */
  async extended(): Promise<boolean> {
    return !(await this.#isPlain());
  }

  /** Whether the server has none of Perennial's extensions: its status is asked the first time. */
  #isPlain(): Promise<boolean> {
    this.#plain ??= this.#json('GET', '/v1/status').then(() => false, unknownRoute);
    return this.#plain;
  }

  /**
   * A Perennial extension's request, or UnsupportedByBackendError where the server lacks it. What
   * the server lacks is learned once: hosted ForeverVM answers one 404 and lacks them all; a
   * local server of an older Perennial, still running after an update, lacks only the newest.
   */
  async #learning<T>(what: string, send: () => Promise<T>): Promise<T> {
    if (this.#lacking.has(what) || (await this.#plain)) throw new UnsupportedByBackendError(what);
    try {
      return await send();
    } catch (error) {
      if (!unknownRoute(error)) throw error;
      this.#lacking.add(what);
      // Learned before this call answers, so that no request of it is left in flight.
      await this.#isPlain();
      throw new UnsupportedByBackendError(what);
    }
  }

  async #json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await (await this.#request(method, path, options)).json()) as T;
  }

  async #request(method: string, path: string, options: RequestOptions = {}, retried = false): Promise<Response> {
    const { body, timeoutMs = 60_000, signal, headers } = options;
    let response: Response;
    try {
      response = await fetch(this.#baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          'x-forevervm-sdk': 'javascript',
          ...this.headers,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : signal,
      });
    } catch (error) {
      const name = (error as Error).name;
      if ((error as { cause?: { code?: string } }).cause?.code === 'UND_ERR_HEADERS_TIMEOUT') {
        throw new ForeverVMError(0, WAIT_CUT, `${this.#baseUrl} did not answer within fetch's wait for headers`);
      }
      if (!retried && name !== 'TimeoutError' && name !== 'AbortError' && (await this.refresh().catch(() => false))) {
        return this.#request(method, path, options, true);
      }
      // Unreachable: nothing was sent; a connection that broke may have carried the request.
      const why = fetchFailure(error as Error);
      if (neverSent(error as Error)) throw new ForeverVMError(0, 'Unreachable', `Cannot reach ${this.#baseUrl}: ${why}`);
      throw new ForeverVMError(0, 'ConnectionLost', `The connection to ${this.#baseUrl} broke before it answered: ${why}`);
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => 'Unknown error');
    let parsed: { code?: string; id?: string | null; message?: string } = {};
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      // not JSON: keep the text
    }
    throw new ForeverVMError(
      response.status,
      parsed.code ?? `HTTP${response.status}`,
      parsed.message ?? `${response.status} ${text.slice(0, 300)}`,
      parsed.id ?? null,
    );
  }
}

/**
 * Whether a failed fetch sent nothing: its connection was never made, or fetch refused the request
 * itself (a bad port, a blocked address), which it says with a cause that has no code.
 */
function neverSent(error: Error): boolean {
  const cause = error.cause as { code?: unknown } | undefined;
  return neverConnected(error) || (cause !== undefined && cause.code === undefined);
}

/** What failed in a fetch: its own message says only "fetch failed", its cause the rest. */
function fetchFailure(error: Error): string {
  const cause = (error.cause as Error | undefined)?.message;
  return cause ? `${error.message} (${cause})` : error.message;
}

/** A streamed response body as text, split at `separator`, each piece as soon as it is whole. */
async function* pieces(response: Response, separator: string): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf(separator)) >= 0) {
      yield buffered.slice(0, end);
      buffered = buffered.slice(end + separator.length);
    }
  }
}

/** A route the server does not know, as opposed to a machine or a file it does not know. */
function unknownRoute(error: unknown): boolean {
  return error instanceof ForeverVMError && (error.code === 'NotFound' || error.status === 405);
}
