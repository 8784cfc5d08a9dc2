/**
 * A task-aware MCP client, as `@modelcontextprotocol/ext-tasks` makes one from the SDK's Client.
 * On a 2026-07-28 connection its requester sends tools/call and tasks/* itself, with the Tasks
 * extension in each request's capabilities ("raw dispatch", which the SDK Client cannot do): over
 * HTTP as a POST with the standard headers, over stdio as a line on the Client's own transport.
 */
import type { Client, Transport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';

type RawDispatch = NonNullable<Parameters<typeof createTaskSessionFromClient>[1]['rawDispatch']>;
type RawResponse = Awaited<ReturnType<RawDispatch>>;
interface RpcMessage {
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

let nextId = 1_000_000;

function framed(request: unknown): RpcMessage & { id: number; method: string } {
  return { jsonrpc: '2.0', id: nextId++, ...(request as { method: string }) } as RpcMessage & { id: number; method: string };
}

function answer(message: RpcMessage): RawResponse {
  return message.error ? { kind: 'error', error: message.error as never } : { kind: 'result', result: message.result as never };
}

/** Raw dispatch over MCP's Streamable HTTP (2026-07-28): one POST per request. */
export function httpDispatch(url: string, token: string): RawDispatch {
  return async (request) => {
    const message = framed(request);
    const params = message.params ?? {};
    const name = message.method === 'tools/call' ? params.name : message.method.startsWith('tasks/') ? params.taskId : undefined;
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': message.method,
        ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify(message),
    });
    const text = await response.text();
    const messages = response.headers.get('content-type')?.includes('text/event-stream')
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data: '))
          .map((line) => JSON.parse(line.slice(6)) as RpcMessage)
      : [JSON.parse(text) as RpcMessage];
    const reply = messages.find((m) => m.id === message.id);
    if (!reply) throw new Error(`No answer to ${message.method} (HTTP ${response.status}): ${text}`);
    return answer(reply);
  };
}

/** Raw dispatch over the Client's own stdio transport: its answers are taken before the Client sees them. */
export function transportDispatch(transport: Transport): RawDispatch {
  const waiting = new Map<number | string, (message: RpcMessage) => void>();
  const clientOwn = transport.onmessage!;
  transport.onmessage = (message, extra) => {
    const id = (message as RpcMessage).id;
    const resolve = id === undefined ? undefined : waiting.get(id);
    if (resolve && !('method' in message)) {
      waiting.delete(id!);
      resolve(message as RpcMessage);
    } else clientOwn(message, extra);
  };
  return (request) => {
    const message = framed(request);
    const reply = new Promise<RpcMessage>((resolve) => waiting.set(message.id, resolve));
    return transport.send(message as never).then(async () => answer(await reply));
  };
}

/** A task session on a connected Client: 2026-07-28 ones dispatch tasks with `dispatch`. */
export function taskSession(client: Client, dispatch?: RawDispatch): TaskEnabledSession {
  const modern = client.getProtocolEra() === 'modern';
  if (!modern) return createTaskSessionFromClient(client, { endpointId: 'perennial-tests' });
  if (!dispatch) throw new Error('A 2026-07-28 task session needs a raw dispatch');
  return createTaskSessionFromClient(client, {
    endpointId: 'perennial-tests',
    rawDispatch: dispatch,
    v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo: { name: 'perennial-tests', version: '1.0.0' }, clientCapabilities: {} },
  });
}
