import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NodeStreamableHTTPServerTransport, toNodeHandler, toWebRequest, type NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, isInitializeRequest, isLegacyRequest, type JSONRPCMessage, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { PerennialClient } from '../shared/perennial-client.ts';
import { DEFAULT_INLINE_IMAGES, McpConnectionQuery, problemsOf } from '../shared/requests.ts';
import { createMcpServer, type McpOptions } from './mcp-server.ts';
import { McpTasks } from './tasks/mcp-tasks.ts';
import { ending, refusal, subscribe, taskListen, type TaskListen } from './tasks/task-subscriptions.ts';
import { ResourceListChanges } from './resource-list-changes.ts';
import { LegacySseTransport } from './sse-transport.ts';

/** How often a subscription's quiet stream says it is alive, so that proxies keep it open. */
const SSE_KEEP_ALIVE_MS = 15_000;

/** JSON-RPC's code for a message that is not JSON (or not JSON the server will read). */
export const JSON_RPC_PARSE_ERROR = -32700;

/** A JSON-RPC error answer, as MCP clients expect from the transport layer. */
export function rpcError(res: ServerResponse, status: number, message: string, code = -32000): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** A connection's options from its URL's query (`McpConnectionQuery`); an error says what is wrong. */
function connectionOptions(url = '/'): McpOptions {
  const parsed = McpConnectionQuery.safeParse(Object.fromEntries(new URL(url, 'http://x').searchParams));
  if (!parsed.success) throw new Error(problemsOf(parsed.error));
  const { inlineImages, answerWithin, machineDefaults } = parsed.data;
  return {
    ...(inlineImages === undefined ? {} : { inlineImages }),
    ...(answerWithin === undefined ? {} : { answerWithinMs: answerWithin * 1000 }),
    machineDefaults,
  };
}

/** The options of the connection `req` opens, or undefined when it was answered with what is wrong. */
function checkedOptions(req: IncomingMessage, res: ServerResponse): McpOptions | undefined {
  try {
    return connectionOptions(req.url);
  } catch (error) {
    rpcError(res, 400, (error as Error).message);
    return undefined;
  }
}

/** Who an MCP request is from, as the server named them (`id`), and the machines as they may reach them. */
export interface McpCaller {
  id: string;
  client: PerennialClient;
}

/** One caller's MCP: their client, their tasks, the per-request handler that serves them. */
class CallerMcp {
  readonly tasks: McpTasks;
  readonly changes: ResourceListChanges;
  readonly modern: McpHttpHandler;
  readonly serveModern: NodeMcpRequestHandler;

  constructor(
    readonly client: PerennialClient,
    taskSecret: string,
    private readonly defaults: McpOptions,
  ) {
    this.tasks = new McpTasks(client, taskSecret);
    this.modern = createMcpHandler(({ requestInfo }) => createMcpServer(client, this.tasks, { ...defaults, ...connectionOptions(requestInfo?.url) }), {
      legacy: 'reject',
    });
    this.serveModern = toNodeHandler(this.modern);
    this.changes = new ResourceListChanges(client);
    this.changes.listen(() => this.modern.notify.resourcesChanged());
  }

  /** A server for one connection of the 2025 era or older, with `options` over the defaults. */
  connectionServer(options: McpOptions) {
    return this.changes.track(createMcpServer(this.client, this.tasks, { ...this.defaults, ...options }));
  }

  async close(): Promise<void> {
    this.changes.close();
    this.tasks.close();
    await this.modern.close();
  }
}

/**
 * MCP over HTTP on the local server. `/mcp` serves both protocol eras: 2026-07-28 requests
 * (each carries its own version and capabilities) through the SDK's per-request handler, and
 * 2025-era clients (VS Code, Cursor, the Inspector) with sessions, so that their GET stream,
 * cancellation and server-to-client requests keep working. `/sse` + `/messages` is the
 * 2024-11-05 HTTP+SSE transport. Access checks happen before these handlers run; each caller
 * gets tools, tasks and sessions of their own, and a session answers only the caller who opened it.
 */
export class McpHttpEndpoints {
  readonly #callers = new Map<string, CallerMcp>();
  readonly #sessions = new Map<string, { caller: string; transport: NodeStreamableHTTPServerTransport }>();
  readonly #sse = new Map<string, { caller: string; transport: LegacySseTransport }>();
  /** The open subscriptions to tasks, each ended as the server ends it. */
  readonly #listens = new Set<() => void>();

  /** `taskSecret`: what task ids are sealed with; `defaults`: what a connection gets unless it chooses otherwise. */
  constructor(
    private readonly taskSecret: string,
    private readonly defaults: McpOptions = {},
  ) {}

  #for(caller: McpCaller): CallerMcp {
    let mcp = this.#callers.get(caller.id);
    if (!mcp) this.#callers.set(caller.id, (mcp = new CallerMcp(caller.client, this.taskSecret, this.defaults)));
    return mcp;
  }

  /** `/mcp`: POST, GET (a 2025 session's stream) and DELETE (end that session). */
  async handleStreamable(req: IncomingMessage, res: ServerResponse, body: unknown, caller: McpCaller): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    const session = typeof sessionId === 'string' ? this.#sessions.get(sessionId) : undefined;
    // Another caller's session is answered as one that does not exist.
    if (session && session.caller === caller.id) return session.transport.handleRequest(req, res, body);
    const options = checkedOptions(req, res);
    if (!options) return;
    const mcp = this.#for(caller);
    const listen = taskListen(body);
    if (listen) return this.#serveTaskListen(res, listen, options, mcp);
    if (!(await isLegacyRequest(await toWebRequest(req, body), body))) return mcp.serveModern(req, res, body);
    if (sessionId) return rpcError(res, 404, 'Session not found: initialize again');
    if (req.method !== 'POST' || !isInitializeRequest(body)) return rpcError(res, 400, 'Bad request: no session; start with an initialize request');
    const transport: NodeStreamableHTTPServerTransport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void this.#sessions.set(id, { caller: caller.id, transport }),
    });
    transport.onclose = () => {
      if (transport.sessionId) this.#sessions.delete(transport.sessionId);
    };
    await mcp.connectionServer(options).connect(transport);
    await transport.handleRequest(req, res, body);
  }

  /** A 2026-07-28 subscription to tasks (`task-subscriptions.ts`): its notifications as an SSE stream, until the client closes it or the server stops. */
  async #serveTaskListen(res: ServerResponse, listen: TaskListen, options: McpOptions, mcp: CallerMcp): Promise<void> {
    const refused = refusal(listen);
    if (refused) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(refused));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive' });
    const write = (message: JSONRPCMessage) => res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    const keepAlive = setInterval(() => res.write(': keepalive\n\n'), SSE_KEEP_ALIVE_MS);
    const inlineImages = options.inlineImages ?? this.defaults.inlineImages ?? DEFAULT_INLINE_IMAGES;
    const stopping = subscribe(listen, { tasks: mcp.tasks, inlineImages, onResourceListChange: (listener) => mcp.changes.listen(listener) }, write);
    const end = () => {
      clearInterval(keepAlive);
      this.#listens.delete(graceful);
      void stopping.then((stop) => stop());
    };
    const graceful = () => {
      write(ending(listen));
      res.end();
      end();
    };
    this.#listens.add(graceful);
    res.on('close', end);
  }

  /** `GET /sse`: opens a legacy SSE session; its `endpoint` event points at /messages. */
  async openSse(req: IncomingMessage, res: ServerResponse, caller: McpCaller): Promise<void> {
    const options = checkedOptions(req, res);
    if (!options) return;
    const transport = new LegacySseTransport('/messages', res);
    this.#sse.set(transport.sessionId, { caller: caller.id, transport });
    res.on('close', () => this.#sse.delete(transport.sessionId));
    await this.#for(caller).connectionServer(options).connect(transport);
  }

  /** `POST /messages?sessionId=…`: a message for a legacy SSE session. */
  postSseMessage(req: IncomingMessage, res: ServerResponse, body: unknown, caller: McpCaller): void {
    const id = new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '';
    const session = this.#sse.get(id);
    if (!session || session.caller !== caller.id) return rpcError(res, 404, 'Session not found: open /sse again');
    session.transport.accept(body, res);
  }

  async close(): Promise<void> {
    for (const graceful of [...this.#listens]) graceful();
    const transports = [...this.#sessions.values(), ...this.#sse.values()].map((s) => s.transport);
    const callers = [...this.#callers.values()];
    this.#sessions.clear();
    this.#sse.clear();
    this.#callers.clear();
    await Promise.all([...callers.map((c) => c.close()), ...transports.map((t) => t.close())].map((closing) => closing.catch(() => {})));
  }
}
