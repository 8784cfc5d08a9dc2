import type { IncomingMessage, ServerResponse } from 'node:http';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { MAX_BODY_BYTES, MAX_JSON_DEPTH } from '../shared/requests.ts';

/** The request's URL, or 400 when its target does not parse as one. */
export function requestUrl(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? '/', 'http://x');
  } catch {
    throw new ForeverVMError(400, 'BadRequest', `Not a request target: ${JSON.stringify(req.url)}`);
  }
}

/** A percent-encoded segment of a path (a machine name, a variable), or 400 when it does not decode. */
export function pathSegment(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ForeverVMError(400, 'BadRequest', `The ${what} in the path is not valid percent-encoding: ${JSON.stringify(raw)}`);
  }
}

/** Whether JSON text nests arrays and objects deeper than `limit`, counted without recursion. */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Each request's body as first read: a request may be read again (routed, then served here after all). */
const bodies = new WeakMap<IncomingMessage, Promise<Buffer>>();

/** The request body, or 413 past `limit` bytes; the same bytes however often it is asked for. */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  let body = bodies.get(req);
  if (!body) {
    body = receive(req, limit);
    bodies.set(req, body);
  }
  return body;
}

async function receive(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) throw new ForeverVMError(413, 'PayloadTooLarge', `The body is larger than ${limit} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new ForeverVMError(413, 'PayloadTooLarge', `The body is larger than ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The request body as JSON; an empty body is `{}`. */
export async function readJson(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  const text = (await readBody(req, limit)).toString('utf8');
  if (!text.trim()) return {};
  if (nestsDeeperThan(text, MAX_JSON_DEPTH))
    throw new ForeverVMError(400, 'BadRequest', `The body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ForeverVMError(400, 'BadRequest', `The body is not valid JSON: ${(error as Error).message}`);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

export function sendError(res: ServerResponse, error: ForeverVMError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, error.status, error.toResponseObject());
}
