import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { PerennialClient } from '../client/perennial-client.ts';
import { createMcpServer } from './mcp-server.ts';

/** A JSON-RPC error answer, as MCP clients expect from the transport layer. */
function rpcError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

/**
 * MCP over HTTP on the local server: Streamable HTTP with sessions at `/mcp`, and the legacy
 * HTTP+SSE transport at `/sse` + `/messages`. Each session gets its own MCP server; the tools
 * reach the machines through `client`. Access checks happen before these handlers run.
 */
export class McpHttpEndpoints {
  readonly #streamable = new Map<string, StreamableHTTPServerTransport>();
  readonly #sse = new Map<string, SSEServerTransport>();

  constructor(private readonly client: PerennialClient) {}

  /** `/mcp`: POST (requests, initialize makes a session), GET (the session's stream), DELETE (end it). */
  async handleStreamable(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? this.#streamable.get(sessionId) : undefined;
    if (existing) {
      await existing.handleRequest(req, res, body);
      return;
    }
    if (sessionId) return rpcError(res, 404, 'Session not found: initialize again');
    if (req.method !== 'POST' || !isInitializeRequest(body)) return rpcError(res, 400, 'Bad request: no session; start with an initialize request');
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void this.#streamable.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) this.#streamable.delete(transport.sessionId);
    };
    await createMcpServer(this.client).connect(transport);
    await transport.handleRequest(req, res, body);
  }

  /** `GET /sse`: opens a legacy SSE session; its `endpoint` event points at /messages. */
  async openSse(res: ServerResponse): Promise<void> {
    const transport = new SSEServerTransport('/messages', res);
    this.#sse.set(transport.sessionId, transport);
    res.on('close', () => this.#sse.delete(transport.sessionId));
    await createMcpServer(this.client).connect(transport);
  }

  /** `POST /messages?sessionId=…`: a message for a legacy SSE session. */
  async postSseMessage(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const id = new URL(req.url ?? '/', 'http://x').searchParams.get('sessionId') ?? '';
    const transport = this.#sse.get(id);
    if (!transport) return rpcError(res, 404, 'Session not found: open /sse again');
    await transport.handlePostMessage(req, res, body);
  }

  async close(): Promise<void> {
    const transports = [...this.#streamable.values(), ...this.#sse.values()];
    this.#streamable.clear();
    this.#sse.clear();
    await Promise.all(transports.map((t) => t.close().catch(() => {})));
  }
}
