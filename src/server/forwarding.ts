import { request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { CodedError } from '../platform/coded-error.ts';

/** The node a request was to go to did not answer (it stopped; its lease has not run out yet). Nothing reached it. */
export class NodeUnreachableError extends CodedError {
  static override readonly errorCode = 'NodeUnreachable';
}

/** How many nodes a request has passed through: one forwards it once, a second time only while the machine moves. */
export const HOPS_HEADER = 'x-perennial-hops';
const MOST_HOPS = 2;

/** Headers that belong to one connection, not to the request (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host', 'content-length']);

function forwardedHeaders(headers: IncomingHttpHeaders, target: URL, keep: string[] = []): Record<string, string | string[]> {
  const hops = Number(headers[HOPS_HEADER] ?? 0) + 1;
  const out: Record<string, string | string[]> = { host: target.host, [HOPS_HEADER]: String(hops) };
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && (!HOP_BY_HOP.has(name) || keep.includes(name)) && name !== HOPS_HEADER) out[name] = value;
  }
  return out;
}

/** Whether the request has already been forwarded as often as it may be. */
export function forwardedTooOften(req: IncomingMessage): boolean {
  return Number(req.headers[HOPS_HEADER] ?? 0) >= MOST_HOPS;
}

/**
 * Sends `req` (its body already read, `body`) to the node at `base`, and its answer back as it
 * comes (a result stream, an event stream). Rejects with a NodeUnreachableError, having sent
 * nothing to the caller, when the node does not answer at all.
 */
export function forwardRequest(req: IncomingMessage, res: ServerResponse, base: string, body: Buffer): Promise<void> {
  const target = new URL(req.url ?? '/', base);
  return new Promise((resolve, reject) => {
    const outgoing = request(target, { method: req.method, headers: { ...forwardedHeaders(req.headers, target), 'content-length': String(body.length) } });
    outgoing.once('error', (error) => reject(new NodeUnreachableError(`The node at ${base} did not answer: ${error.message}`, { cause: error })));
    outgoing.once('response', (answer) => {
      outgoing.removeAllListeners('error');
      outgoing.on('error', () => res.destroy());
      res.writeHead(answer.statusCode ?? 502, forwardedHeaders(answer.headers, target));
      answer.pipe(res);
      answer.once('end', () => resolve());
      answer.once('error', () => res.destroy());
      res.once('close', () => {
        outgoing.destroy();
        resolve();
      });
    });
    outgoing.end(body);
  });
}

/**
 * Carries a WebSocket upgrade over to the node at `base`: once that node switches protocols, the
 * two connections are joined. Rejects with a NodeUnreachableError, having written nothing to the
 * caller's socket, when the node does not answer at all.
 */
export function forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, base: string): Promise<void> {
  const target = new URL(req.url ?? '/', base);
  return new Promise((resolve, reject) => {
    const outgoing = request(target, { method: req.method, headers: forwardedHeaders(req.headers, target, ['connection', 'upgrade']) });
    outgoing.once('error', (error) => reject(new NodeUnreachableError(`The node at ${base} did not answer: ${error.message}`, { cause: error })));
    outgoing.once('upgrade', (answer, upstream, upstreamHead) => {
      const lines = [`HTTP/1.1 101 ${answer.statusMessage ?? 'Switching Protocols'}`];
      for (let i = 0; i < answer.rawHeaders.length; i += 2) lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (upstreamHead.length) socket.write(upstreamHead);
      if (head.length) upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
      const close = () => {
        upstream.destroy();
        socket.destroy();
      };
      upstream.once('close', close);
      socket.once('close', close);
      upstream.on('error', close);
      socket.on('error', close);
      resolve();
    });
    outgoing.once('response', (answer) => {
      // Refused (the machine is not there either): the answer goes back as it is.
      const lines = [`HTTP/1.1 ${answer.statusCode} ${answer.statusMessage ?? ''}`];
      for (let i = 0; i < answer.rawHeaders.length; i += 2) lines.push(`${answer.rawHeaders[i]}: ${answer.rawHeaders[i + 1]}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      answer.pipe(socket);
      answer.once('end', () => resolve());
    });
    outgoing.end();
  });
}
