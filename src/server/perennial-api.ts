import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ManagerEvent, MachineManager } from '../machines/machine-manager.ts';
import {
  base64Content,
  CheckpointBody,
  CodeBody,
  CompleteBody,
  ForkBody,
  RollbackBody,
  FilePath,
  HistoryLast,
  InspectBody,
  InvalidRequestError,
  MAX_FILE_BYTES,
  PackagesBody,
  WriteFileBody,
  parseRequest,
} from '../shared/requests.ts';
import type {
  CheckpointsResponse,
  DeleteResponse,
  HistoryResponse,
  IsCompleteResponse,
  MachinesResponse,
  PackagesResponse,
  VariablesResponse,
} from '../shared/types.ts';
import { machineName, type Handler } from './forevervm-api.ts';
import { pathSegment, readJson, requestUrl, sendJson } from './http-io.ts';
import { statusReport, toMachineEvent } from './machine-answers.ts';

/** How often an idle event stream gets a comment, so that proxies and clients keep it open. */
const EVENT_HEARTBEAT_MS = 15_000;

/** Perennial's own endpoints under /v1, which its client detects and degrades around. */
export function perennialRoutes(manager: MachineManager): Array<[string, RegExp, Handler]> {
  const query = (req: IncomingMessage, key: string) => requestUrl(req).searchParams.get(key);
  return [
    [
      'GET',
      /^\/v1\/machines$/,
      async (req, res) => {
        // `?tag=key=value`, repeated: machines carrying all of them (tag keys hold no "=").
        const tags = requestUrl(req)
          .searchParams.getAll('tag')
          .map((tag) => {
            const at = tag.indexOf('=');
            if (at < 1) throw new InvalidRequestError(`A tag filter is key=value, not ${JSON.stringify(tag)}`);
            return [tag.slice(0, at), tag.slice(at + 1)];
          });
        sendJson(res, 200, { machines: manager.list(Object.fromEntries(tags)) } satisfies MachinesResponse);
      },
    ],
    ['GET', /^\/v1\/machine\/([^/]+)$/, async (_req, res, [raw]) => sendJson(res, 200, manager.get(machineName(raw!)))],
    [
      'DELETE',
      /^\/v1\/machine\/([^/]+)$/,
      async (_req, res, [raw]) => {
        await manager.delete(machineName(raw!));
        sendJson(res, 200, { deleted: true } satisfies DeleteResponse);
      },
    ],
    ['POST', /^\/v1\/machine\/([^/]+)\/interrupt$/, async (_req, res, [raw]) => sendJson(res, 200, manager.interrupt(machineName(raw!)))],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/swap$/,
      async (_req, res, [raw]) => {
        const name = machineName(raw!);
        await manager.swap(name);
        sendJson(res, 200, manager.get(name));
      },
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/variables$/,
      async (_req, res, [raw]) => sendJson(res, 200, { variables: await manager.kernel(machineName(raw!), 'variables', {}) } satisfies VariablesResponse),
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/variables\/([^/]+)$/,
      async (_req, res, [raw, variable]) =>
        sendJson(res, 200, await manager.kernel(machineName(raw!), 'variable', { name: pathSegment(variable!, 'variable name') })),
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/history$/,
      async (req, res, [raw]) => {
        const last = query(req, 'last');
        const count = last === null ? undefined : parseRequest(HistoryLast, Number(last));
        sendJson(res, 200, { history: await manager.history(machineName(raw!), count) } satisfies HistoryResponse);
      },
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/packages$/,
      async (req, res, [raw]) => {
        const body = parseRequest(PackagesBody, await readJson(req));
        sendJson(res, 200, { installed: await manager.installPackages(machineName(raw!), body.packages) } satisfies PackagesResponse);
      },
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/fork$/,
      async (req, res, [raw]) => sendJson(res, 200, await manager.fork(machineName(raw!), parseRequest(ForkBody, await readJson(req)))),
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/checkpoints$/,
      async (req, res, [raw]) => sendJson(res, 200, await manager.checkpoint(machineName(raw!), parseRequest(CheckpointBody, await readJson(req)))),
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/checkpoints$/,
      async (_req, res, [raw]) => sendJson(res, 200, { checkpoints: await manager.checkpoints(machineName(raw!)) } satisfies CheckpointsResponse),
    ],
    [
      'DELETE',
      /^\/v1\/machine\/([^/]+)\/checkpoints\/([^/]+)$/,
      async (_req, res, [raw, checkpoint]) => {
        await manager.deleteCheckpoint(machineName(raw!), pathSegment(checkpoint!, 'checkpoint'));
        sendJson(res, 200, { deleted: true } satisfies DeleteResponse);
      },
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/rollback$/,
      async (req, res, [raw]) => sendJson(res, 200, await manager.rollback(machineName(raw!), parseRequest(RollbackBody, await readJson(req)).checkpoint)),
    ],
    ['POST', /^\/v1\/machine\/([^/]+)\/upgrade$/, async (_req, res, [raw]) => sendJson(res, 200, await manager.upgrade(machineName(raw!)))],
    ['POST', /^\/v1\/machine\/([^/]+)\/reset$/, async (_req, res, [raw]) => sendJson(res, 200, await manager.kernel(machineName(raw!), 'reset', {}))],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/inspect$/,
      async (req, res, [raw]) => {
        const { expression } = parseRequest(InspectBody, await readJson(req));
        sendJson(res, 200, await manager.kernel(machineName(raw!), 'inspect', { expr: expression }));
      },
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/complete$/,
      async (req, res, [raw]) => sendJson(res, 200, await manager.complete(machineName(raw!), parseRequest(CompleteBody, await readJson(req)))),
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/is-complete$/,
      async (req, res, [raw]) => {
        const { code } = parseRequest(CodeBody, await readJson(req));
        sendJson(res, 200, { status: await manager.kernel(machineName(raw!), 'is_complete', { code }) } satisfies IsCompleteResponse);
      },
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/files$/,
      async (req, res, [raw]) => sendJson(res, 200, await manager.kernel(machineName(raw!), 'list_files', { path: query(req, 'path') ?? '' })),
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/files\/content$/,
      async (req, res, [raw]) =>
        sendJson(res, 200, await manager.kernel(machineName(raw!), 'read_file', { path: parseRequest(FilePath, query(req, 'path')), limit: MAX_FILE_BYTES })),
    ],
    [
      'PUT',
      /^\/v1\/machine\/([^/]+)\/files\/content$/,
      async (req, res, [raw]) => {
        const body = parseRequest(WriteFileBody, await readJson(req));
        sendJson(res, 200, await manager.kernel(machineName(raw!), 'write_file', { path: body.path, content: base64Content(body.content, body.encoding) }));
      },
    ],
    ['GET', /^\/v1\/status$/, async (_req, res) => sendJson(res, 200, statusReport(manager))],
    ['GET', /^\/v1\/events$/, async (_req, res) => streamEvents(manager, res)],
  ];
}

/**
 * Server-sent events for everything that changes: machines created or deleted, state changes,
 * finished instructions (their seq and whether they failed; the result is one request away).
 */
function streamEvents(manager: MachineManager, res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
  res.write(': perennial events\n\n');
  const listener = (event: ManagerEvent) => res.write(`event: ${event.type}\ndata: ${JSON.stringify(toMachineEvent(event))}\n\n`);
  manager.on('event', listener);
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), EVENT_HEARTBEAT_MS);
  return new Promise((resolve) => {
    res.on('close', () => {
      clearInterval(heartbeat);
      manager.off('event', listener);
      resolve();
    });
  });
}
