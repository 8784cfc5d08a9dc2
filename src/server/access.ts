import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { writeFileAtomic } from '../platform/atomic-file.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { requestUrl } from './http-io.ts';

/** The server's token, in the data dir (mode 0600): it stays the same from one start to the next. */
export const TOKEN_FILE = 'server-token';

/**
 * The server's bearer token: made once, kept 0600 in the data dir, so clients stay configured.
 * `shared`: a cluster's, which every node takes (from the first node's) and keeps in its data dir,
 * where a client on the node's computer finds it.
 */
export async function loadOrCreateToken(dataDir: string, shared?: (proposed: string) => Promise<string>): Promise<string> {
  const path = join(dataDir, TOKEN_FILE);
  const existing = (await readFile(path, 'utf8').catch(() => '')).trim();
  const proposed = existing.length >= 32 ? existing : randomBytes(32).toString('base64url');
  const token = shared ? await shared(proposed) : proposed;
  if (token !== existing) await writeFileAtomic(path, token, 0o600);
  return token;
}

/**
 * Which requests reach the local server at all: addressed to this host by its loopback name (no
 * DNS rebinding), not sent by a foreign web page, and carrying a credential (an `Authorization:
 * Bearer` header, or `_forevervm_jwt` in the query, which browsers' WebSockets need), whose
 * holder the team then names (`Team.authenticate`).
 */
export class AccessPolicy {
  #hosts = new Set<string>();

  /**
   * `anyHost`: a server listening beyond loopback (a cluster's node, a team's server), reached by
   * other nodes, people and load balancers by names of their own; the credential guards it, as it
   * guards every request.
   */
  constructor(private readonly anyHost = false) {}

  /**
   * Called once the port is known; `host` is the interface listened on, when not loopback, and
   * `advertised` the address other nodes reach this one at (a cluster's node).
   */
  listeningOn(port: number, host: string, advertised?: string): void {
    const named = host.includes(':') ? `[${host}]` : host;
    this.#hosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${named.toLowerCase()}:${port}`]);
    if (advertised) this.#hosts.add(new URL(advertised).host.toLowerCase());
  }

  /** The credential a request presents; throws the ForeverVMError that answers one that may not pass. */
  credential(req: IncomingMessage): string {
    const host = (req.headers.host ?? '').toLowerCase();
    if (!this.anyHost && !this.#hosts.has(host))
      throw new ForeverVMError(403, 'Forbidden', `Requests must be addressed to this machine (Host ${host || 'missing'} is not allowed)`);
    const origin = req.headers.origin;
    if (origin && !this.#hosts.has(originHost(origin)) && !(this.anyHost && originHost(origin) === host))
      throw new ForeverVMError(403, 'Forbidden', `Requests from ${origin} are not allowed`);
    const presented = bearer(req) ?? requestUrl(req).searchParams.get('_forevervm_jwt');
    if (!presented) throw unauthorized();
    return presented;
  }
}

/** The answer to a request without a credential the server takes. */
export function unauthorized(): ForeverVMError {
  return new ForeverVMError(401, 'Unauthorized', 'A valid bearer token is required');
}

function bearer(req: IncomingMessage): string | null {
  const header = req.headers.authorization ?? '';
  const match = /^Bearer\s+(.+)$/i.exec(header);
  return match ? match[1]!.trim() : null;
}

function originHost(origin: string): string {
  try {
    const url = new URL(origin);
    return url.protocol === 'http:' ? url.host.toLowerCase() : '';
  } catch {
    return '';
  }
}
