import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { removeServerInfo, writeServerInfo } from '../platform/server-info.ts';
import { NodeCacheError, readNodeCache } from '../platform/node-cache.ts';
import { MachineManager, type MachineManagerOptions } from '../machines/machine-manager.ts';
import { VERSION } from '../shared/version.ts';
import { AccessPolicy, loadOrCreateToken, unauthorized } from './access.ts';
import { foreverVMRoutes, machineName, type Handler } from './forevervm-api.ts';
import { toForeverVMError } from './machine-answers.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { CodedError } from '../platform/coded-error.ts';
import { readBody, readJson, requestUrl, sendError, sendJson } from './http-io.ts';
import { challenge, RESOURCE_METADATA_PATH, sendResourceMetadata } from './sign-in-answers.ts';
import { SignInRefused } from '../team/sign-in.ts';
import { forwardRequest, forwardUpgrade, hopsOf } from './forwarding.ts';
import type { ClusterNode } from '../cluster/cluster-node.ts';
import type { Route } from '../cluster/machine-router.ts';
import type { ClusterSettings } from '../cluster/cluster-settings.ts';
import { MAX_BODY_BYTES, parseRequest, StopRequest } from '../shared/requests.ts';
import type { LockRecord } from '../platform/data-dir-lock.ts';
import { JSON_RPC_PARSE_ERROR, McpHttpEndpoints, rpcError } from '../mcp/http-endpoints.ts';
import { InProcessClient } from './in-process-client.ts';
import { CallerMachines } from './caller-machines.ts';
import { Team } from '../team/team.ts';
import { FileTeamStore } from '../team/team-store.ts';
import { FileAuditLog } from '../team/audit-log.ts';
import { ON_BEHALF_HEADER, type Principal } from '../team/principal.ts';
import type { McpCaller } from '../mcp/http-endpoints.ts';
import { perennialRoutes } from './perennial-api.ts';
import { teamRoutes } from './team-api.ts';
import { serveRepl } from './repl-socket.ts';

export const DEFAULT_HOST = '127.0.0.1';

export interface LocalServerOptions extends MachineManagerOptions {
  /** Interface to listen on. Default 127.0.0.1. */
  host?: string;
  /** Port; default 0 (any free port, written to server.json). */
  port?: number;
  /** Started by a client, in the background: a newer client may replace it (server.json says so). */
  background?: boolean;
  /**
   * Longest silence a waiting client sees: a result stream that asked for keep-alive gets a blank
   * line, an MCP call that asked for progress gets the time elapsed. Default 10 s.
   */
  heartbeatMs?: number;
  /** How long a 2026-07-28 MCP call that can be a task runs before it becomes one. Default 1 s. */
  taskAfterMs?: number;
  /** How long an MCP call that runs code, and is not a task, takes at most before it answers. Default 40 s; 0: no bound. */
  answerWithinMs?: number;
  /** Serve as a node of a cluster: its machines' home is its database and bucket, and any node answers for any machine. */
  cluster?: ClusterSettings;
}

const REPL_PATH = /^\/v1\/machine\/([^/]+)\/repl$/;
/** Paths about one machine (and `new` and `list`, which name none). */
const MACHINE_PATH = /^\/v1\/machine\/([^/]+)(?:\/|$)/;

/**
 * HTTP keep-alive: the idle time the server announces, and the longer time it really keeps an
 * idle connection. A client reuses a connection until just before the announced time. A server
 * whose event loop comes late (busy, or short of CPU while forty machines start) runs its
 * timeouts before it reads the requests waiting (nodejs/node#43456): it would close a connection
 * a request is already on, which the client sees as `fetch failed`. The margin covers the lateness.
 */
const KEEP_ALIVE_ANNOUNCED_SECONDS = 5;
const KEEP_ALIVE_HELD_MS = 65_000;

/**
 * The local server: one process that owns a data dir and its machines, and speaks the ForeverVM
 * protocol (plus Perennial's extensions) over HTTP and WebSocket on the loopback interface.
 */
export class LocalServer {
  readonly #routes: Array<[string, RegExp, Handler]>;
  readonly #sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_BODY_BYTES });
  /**
   * Connections asking for a WebSocket, from the request on (while it is routed, and once it is
   * carried over to another node): the HTTP server no longer holds them, and would not close
   * while one stays open.
   */
  readonly #upgrading = new Set<Duplex>();
  readonly #mcp: McpHttpEndpoints;
  /**
   * Resolves when a client asks the server to stop (`POST /v1/server/stop`): whoever runs it
   * closes it then. A request, not a signal: Windows has no SIGTERM between processes.
   */
  readonly stopRequested: Promise<StopRequest>;
  #requestStop!: (request: StopRequest) => void;
  /** Requests in flight and open sockets (WebSocket REPLs, event streams). */
  #active = 0;
  #lastActivity = Date.now();

  /** Each caller's MCP client, by who they are: the machines as they may reach them. */
  readonly #mcpCallers = new Map<string, McpCaller>();

  private constructor(
    readonly manager: MachineManager,
    readonly token: string,
    readonly team: Team,
    private readonly http: Server,
    private readonly access: AccessPolicy,
    { heartbeatMs, taskAfterMs, answerWithinMs }: Pick<LocalServerOptions, 'heartbeatMs' | 'taskAfterMs' | 'answerWithinMs'>,
    readonly cluster: ClusterNode | undefined,
  ) {
    this.#mcp = new McpHttpEndpoints(token, { progressHeartbeatMs: heartbeatMs, taskAfterMs, answerWithinMs });
    this.stopRequested = new Promise((resolve) => (this.#requestStop = resolve));
    const stop: [string, RegExp, Handler] = [
      'POST',
      /^\/v1\/server\/stop$/,
      async (req, res, _params, caller) => {
        if (caller.principal.kind !== 'operator') throw new ForeverVMError(403, 'Forbidden', "Only the server's operator (its own token) stops it");
        const request = parseRequest(StopRequest, await readJson(req));
        if (request.drain && !cluster) throw new ForeverVMError(400, 'BadRequest', 'Only a node of a cluster drains: this server runs its machines alone');
        sendJson(res, 202, { stopping: true });
        // A drain cut short (the directory down) still stops the node, as a stop does: it commits and lets go of what it still has.
        if (request.drain) await cluster?.drain().catch(() => {});
        this.#requestStop(request);
      },
    ];
    this.#routes = [...foreverVMRoutes(heartbeatMs), ...perennialRoutes(), ...teamRoutes(), ...this.#mcpRoutes(), stop];
    http.on('request', (req, res) => void this.#handle(req, res));
    http.on('upgrade', (req, socket, head) => void this.#upgrade(req, socket, head));
  }

  static async start(options: LocalServerOptions): Promise<LocalServer> {
    const node = options.cluster ? null : await readNodeCache(options.dataDir);
    if (node) throw new NodeCacheError(options.dataDir, node);
    // Loaded only for a cluster: one computer's server never reads its code (PostgreSQL's and S3's clients among it).
    const cluster = options.cluster && (await (await import('../cluster/cluster-node.ts')).ClusterNode.open(options.cluster));
    let manager: MachineManager;
    // Made below, once the token is known; a machine starts only once the server serves.
    let team: Team | undefined;
    // On a team's server, a machine whose owner is not recorded yet (a fork as it is made) is a tenant of its own.
    const tenantOf = async (machine: string) => (team && (await team.enabled()) ? ((await team.ownerOf(machine)) ?? `unrecorded:${machine}`) : undefined);
    try {
      manager = await MachineManager.open({ ...options, home: cluster, baseImages: cluster?.baseImages, tenantOf });
    } catch (error) {
      await cluster?.leave();
      throw error;
    }
    const http = createServer();
    try {
      const token = await loadOrCreateToken(options.dataDir, cluster && ((proposed) => cluster.token(proposed)));
      const host = options.host ?? DEFAULT_HOST;
      const records = cluster ? await cluster.teamRecords() : { store: new FileTeamStore(options.dataDir), audit: new FileAuditLog(options.dataDir) };
      team = new Team(records.store, records.audit, token, VERSION);
      // A team document this build cannot read stops the start here, before anything is served.
      await team.enabled();
      // Beyond loopback (a cluster's node, a team's server) it is reached by names of its own: the credential guards it.
      const access = new AccessPolicy(!isLoopback(host));
      // Long polls for results may wait as long as instructions run.
      http.requestTimeout = 0;
      http.headersTimeout = 60_000;
      http.keepAliveTimeout = KEEP_ALIVE_HELD_MS;
      const server = new LocalServer(manager, token, team, http, access, options, cluster);
      await new Promise<void>((resolve, reject) => {
        http.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, host, options.port ?? 0)));
        http.listen(options.port ?? 0, host, () => resolve());
      });
      const port = (http.address() as { port: number }).port;
      const advertised = cluster && (options.cluster!.advertiseUrl ?? advertisedUrl(server.url));
      access.listeningOn(port, host, advertised);
      if (advertised) await cluster.join(advertised, manager, { host, port });
      // The sandbox pool fills once sandbox machines are being made: an editor that never runs code pays for the server alone.
      await writeServerInfo(options.dataDir, {
        pid: process.pid,
        url: server.url,
        token,
        version: VERSION,
        startedAt: new Date().toISOString(),
        background: options.background ?? false,
      });
      return server;
    } catch (error) {
      // Listening already (a cluster's join failed): nothing more is served.
      http.closeAllConnections();
      http.close();
      await manager.close();
      await cluster?.leave();
      throw error;
    }
  }

  get url(): string {
    const address = this.http.address() as { address: string; port: number };
    const host = address.address.includes(':') ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  /** Stops accepting requests, saves every machine and releases the data dir, or hands it to `successor`. */
  async close(successor?: LockRecord): Promise<void> {
    await this.#mcp.close();
    for (const client of this.#sockets.clients) client.terminate();
    for (const socket of this.#upgrading) socket.destroy();
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
    await this.manager.close(successor);
    await this.cluster?.leave();
    // Last: once server.json is gone, the data dir is free for the next server.
    await removeServerInfo(this.manager.dataDir, process.pid);
  }

  /**
   * Milliseconds since anything happened: no request in flight, no socket open, no machine busy.
   * Zero while something is going on.
   */
  idleFor(): number {
    if (this.#active > 0 || this.manager.list().some((m) => m.state === 'busy')) {
      this.#lastActivity = Date.now();
      return 0;
    }
    return Date.now() - this.#lastActivity;
  }

  #track(closable: { once(event: 'close', listener: () => void): unknown }): void {
    this.#active++;
    closable.once('close', () => {
      this.#active--;
      this.#lastActivity = Date.now();
    });
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.#track(res);
    // Set by hand, Node announces this rather than the time it holds the connection.
    if (res.shouldKeepAlive) res.setHeader('Keep-Alive', `timeout=${KEEP_ALIVE_ANNOUNCED_SECONDS}`);
    try {
      if (req.method === 'GET' && req.url === '/health') {
        // Unauthenticated and content-free: enough for a client to know the server is up.
        sendJson(res, 200, { ok: true });
        return;
      }
      const path = requestUrl(req).pathname;
      if (req.method === 'GET' && RESOURCE_METADATA_PATH.test(path)) {
        sendResourceMetadata(res, await this.team.signInSettings());
        return;
      }
      const caller = await this.#caller(req, 'http');
      await this.#route(req, path, {
        here: () => this.#serve(req, res, path, caller),
        there: async (url) => forwardRequest(req, res, url, await readBody(req)),
      });
    } catch (error) {
      const failure = toForeverVMError(error);
      if (failure.status === 401 || failure.status === 403)
        challenge(req, res, failure, await this.team.signInSettings().catch(() => ({ issuer: null, resource: null })));
      sendError(res, failure);
    }
  }

  /** The machines as the request's caller may reach them; 401 for a credential no one holds (which the audit log keeps). */
  async #caller(req: IncomingMessage, via: 'http' | 'websocket'): Promise<CallerMachines> {
    const from = `${req.socket.remoteAddress ?? 'unknown'} ${via}`;
    const onBehalf = req.headers[ON_BEHALF_HEADER];
    let principal: Principal | undefined;
    try {
      principal = await this.team.authenticate(this.access.credential(req), typeof onBehalf === 'string' ? onBehalf : undefined);
    } catch (error) {
      if (!(error instanceof SignInRefused)) throw error;
      await this.team.record(undefined, { action: 'signed in', from, outcome: 'refused', code: 'InvalidToken' });
      throw new ForeverVMError(401, 'Unauthorized', error.message);
    }
    if (!principal) {
      await this.team.record(undefined, { action: 'signed in', from, outcome: 'refused', code: 'Unauthorized' });
      throw unauthorized();
    }
    if (principal.kind === 'person' && principal.credential.startsWith('sign-in ') && principal.scopes.size === 0) {
      await this.team.record(principal, { action: 'signed in', from, outcome: 'refused', code: 'InsufficientScope' });
      throw new ForeverVMError(403, 'InsufficientScope', "Your sign-in grants none of Perennial's scopes: sign in again and allow reading or running machines");
    }
    return new CallerMachines(this.manager, this.team, principal, from);
  }

  /**
   * The MCP client of `principal`, made once for each credential: its tasks and sessions are its
   * own, and it holds exactly the scopes of the key (or sign-in) it was made for.
   */
  #mcpCaller(principal: Principal): McpCaller {
    // The scopes too: two tokens of one sign-in may grant different ones.
    const id = principal.kind === 'operator' ? 'operator' : `${principal.person} ${principal.credential} ${[...principal.scopes].sort().join(',')}`;
    let caller = this.#mcpCallers.get(id);
    if (!caller) {
      const local = new InProcessClient(new CallerMachines(this.manager, this.team, principal, 'mcp'));
      const client = this.cluster ? this.cluster.client(local, principal) : local;
      this.#mcpCallers.set(id, (caller = { id, client }));
    }
    return caller;
  }

  /** Answers the request with this server's route for it. */
  async #serve(req: IncomingMessage, res: ServerResponse, path: string, caller: CallerMachines): Promise<void> {
    let pathMatched = false;
    for (const [method, pattern, handler] of this.#routes) {
      const match = pattern.exec(path);
      if (!match) continue;
      pathMatched = true;
      if (method !== req.method) continue;
      await handler(req, res, match.slice(1), caller);
      return;
    }
    throw pathMatched
      ? new ForeverVMError(405, 'MethodNotAllowed', `${req.method} is not allowed on ${path}`)
      : new ForeverVMError(404, 'NotFound', `No such endpoint: ${path}`);
  }

  async #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    this.#upgrading.add(socket);
    socket.once('close', () => this.#upgrading.delete(socket));
    try {
      const caller = await this.#caller(req, 'websocket');
      const path = requestUrl(req).pathname;
      const match = REPL_PATH.exec(path);
      if (!match) throw new ForeverVMError(404, 'NotFound', 'WebSockets are served on /v1/machine/{name}/repl');
      const name = match[1] === 'new' ? 'new' : machineName(match[1]!);
      await this.#route(req, path, {
        here: async () =>
          this.#sockets.handleUpgrade(req, socket, head, (ws) => {
            this.#track(ws);
            serveRepl(ws, caller, name);
          }),
        there: (url) => forwardUpgrade(req, socket, head, url),
      });
    } catch (error) {
      const failure = toForeverVMError(error);
      const body = JSON.stringify(failure.toResponseObject());
      socket.end(
        `HTTP/1.1 ${failure.status} ${failure.code}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    }
  }

  /** Serves a request where its machine runs, or a new machine is made: in a cluster, where the router places it; else here. */
  #route(req: IncomingMessage, path: string, route: Route<void>): Promise<void> {
    const raw = MACHINE_PATH.exec(path)?.[1];
    if (!this.cluster || !raw || raw === 'list') return route.here();
    return this.cluster.router.route(raw === 'new' ? null : machineName(raw), route, hopsOf(req));
  }

  /** MCP over Streamable HTTP (`/mcp`) and legacy SSE (`/sse`, `/messages`); same access checks. */
  #mcpRoutes(): Array<[string, RegExp, Handler]> {
    const streamable: Handler = async (req, res, _params, caller) => {
      const body = req.method === 'POST' ? await mcpBody(req, res) : { message: undefined };
      if (body) await this.#mcp.handleStreamable(req, res, body.message, this.#mcpCaller(caller.principal));
    };
    return [
      ['POST', /^\/mcp$/, streamable],
      ['GET', /^\/mcp$/, streamable],
      ['DELETE', /^\/mcp$/, streamable],
      ['GET', /^\/sse$/, async (req, res, _params, caller) => this.#mcp.openSse(req, res, this.#mcpCaller(caller.principal))],
      [
        'POST',
        /^\/messages$/,
        async (req, res, _params, caller) => {
          const body = await mcpBody(req, res);
          if (body) this.#mcp.postSseMessage(req, res, body.message, this.#mcpCaller(caller.principal));
        },
      ],
    ];
  }
}

/** An MCP message, or undefined when the body was answered with the protocol's parse error. */
async function mcpBody(req: IncomingMessage, res: ServerResponse): Promise<{ message: unknown } | undefined> {
  try {
    return { message: await readJson(req) };
  } catch (error) {
    const failure = toForeverVMError(error);
    if (failure.status >= 500) throw error;
    rpcError(res, failure.status, failure.message, JSON_RPC_PARSE_ERROR);
    return undefined;
  }
}

/** The server cannot listen where it was told to. */
class ListenError extends CodedError {
  static override readonly errorCode = 'CannotListen';
}

/** Why the server cannot listen, with what to do instead; other errors as they are. */
function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host}:${port}`;
  if (error.code === 'EADDRINUSE')
    return new ListenError(`Port ${port} on ${host} is in use by another program; choose another with --port, or --port 0 for any free port`);
  if (error.code === 'EACCES') return new ListenError(`This user may not listen on ${where} (ports below 1024 need privileges); choose another with --port`);
  if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND') return new ListenError(`${host} is not an address of this computer; use --host 127.0.0.1`);
  return error;
}

/** Where other nodes reach a server listening at `url`: a server on every interface is reached by this computer's name. */
function advertisedUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.hostname === '0.0.0.0' || parsed.hostname === '[::]') parsed.hostname = hostname();
  return parsed.toString().replace(/\/$/, '');
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}
