import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { parseJSONRPCMessage, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/server';

/**
 * The HTTP+SSE transport of protocol 2024-11-05, which the v2 SDK no longer ships and older
 * clients (Claude Desktop bridges, early Cursor) still use: `GET /sse` opens the stream and is
 * told where to post (`endpoint` event), each posted message is acknowledged with 202, and
 * every answer travels on the stream.
 */
export class LegacySseTransport implements Transport {
  readonly sessionId = randomUUID();
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  #closed = false;

  constructor(
    private readonly endpoint: string,
    private readonly stream: ServerResponse,
  ) {
    stream.on('close', () => this.#end());
  }

  async start(): Promise<void> {
    this.stream.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    this.stream.write(`event: endpoint\ndata: ${this.endpoint}?sessionId=${this.sessionId}\n\n`);
  }

  /** A message posted for this session: answered 202 at once, or 400 if it is not JSON-RPC. */
  accept(body: unknown, res: ServerResponse): void {
    let message: JSONRPCMessage;
    try {
      message = parseJSONRPCMessage(body);
    } catch (error) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`Invalid message: ${(error as Error).message}`);
      return;
    }
    res.writeHead(202).end('Accepted');
    this.onmessage?.(message);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error('The SSE stream is closed');
    this.stream.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  }

  async close(): Promise<void> {
    this.stream.end();
    this.#end();
  }

  #end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}
