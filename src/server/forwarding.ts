import { request, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { NodeUnreachableError } from '../cluster/machine-router.ts';
import { neverConnected } from '../platform/connection-errors.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';

/** How many nodes a request has passed through (the router bounds it). */
const HOPS_HEADER = 'x-perennial-hops';

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

/** How many nodes the request has passed through. */
export function hopsOf(req: IncomingMessage): number {
  return Number(req.headers[HOPS_HEADER] ?? 0) || 0;
}

/** Why a forwarded request failed before any answer: nothing reached the node (the router may send it elsewhere), or it may have. */
function notAnswered(error: Error, base: string): Error {
  if (neverConnected(error)) return new NodeUnreachableError(`The node at ${base} could not be reached: ${error.message}`, { cause: error });
  return new ForeverVMError(
    502,
    'NodeLost',
    `The node at ${base} stopped before it answered (${error.message}): what the request did there is lost with it, and the machine's next result says so`,
  );
}

/**
 * Sends `req` (its body already read, `body`) to the node at `base`, and its answer back as it
 * comes (a result stream, an event stream). Rejects, having sent nothing to the caller, when the
 * node does not answer: with a NodeUnreachableError when nothing reached it. A kept-alive
 * connection that the node closed as the request went out is tried again once, on a new one.
 */
export function forwardRequest(req: IncomingMessage, res: ServerResponse, base: string, body: Buffer, fresh = false): Promise<void> {
  const target = new URL(req.url ?? '/', base);
  return new Promise((resolve, reject) => {
    const outgoing = request(target, {
      method: req.method,
      headers: { ...forwardedHeaders(req.headers, target), 'content-length': String(body.length) },
      ...(fresh ? { agent: false } : {}),
    });
    outgoing.once('error', (error: NodeJS.ErrnoException) => {
      const stale = outgoing.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      if (stale && !fresh) forwardRequest(req, res, base, body, true).then(resolve, reject);
      else reject(notAnswered(error, base));
    });
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
 * caller's socket, when the node does not answer.
 */
export function forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, base: string): Promise<void> {
  const target = new URL(req.url ?? '/', base);
  return new Promise((resolve, reject) => {
    const outgoing = request(target, { method: req.method, headers: forwardedHeaders(req.headers, target, ['connection', 'upgrade']) });
    // Before the node switches protocols nothing has run there: whatever failed, the upgrade may go elsewhere.
    outgoing.once('error', (error) => reject(new NodeUnreachableError(`The node at ${base} did not take the connection: ${error.message}`, { cause: error })));
    outgoing.once('upgrade', (answer, upstream, upstreamHead) => {
      // The caller went away meanwhile (or this server is closing): nothing to join.
      if (socket.destroyed) {
        upstream.destroy();
        resolve();
        return;
      }
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
