import type { ServerResponse } from 'node:http';
import type { CallerMachines } from './caller-machines.ts';
import { OPERATION_NAMES, OPERATIONS, type HttpRoute, type OperationName } from '../shared/operations.ts';
import type { Handler } from './forevervm-api.ts';
import { sendJson } from './http-io.ts';
import { tableRoute } from './table-routes.ts';

/** How often an idle event stream gets a comment, so that proxies and clients keep it open. */
const EVENT_HEARTBEAT_MS = 15_000;

/** Perennial's own endpoints under /v1, which its client detects and degrades around: every operation of the table, the status and the event stream. */
export function perennialRoutes(): Array<[string, RegExp, Handler]> {
  return [
    ...OPERATION_NAMES.map((op) => operationRoute(op)),
    ['GET', /^\/v1\/status$/, async (_req, res, _params, machines) => sendJson(res, 200, await machines.status())],
    ['GET', /^\/v1\/events$/, async (_req, res, _params, machines) => streamEvents(machines, res)],
  ];
}

/** The route of operation `op`: the machines layer's result for the caller, checked against what they hold on the machine. */
function operationRoute<K extends OperationName>(op: K): [string, RegExp, Handler] {
  return tableRoute(OPERATIONS[op] as unknown as HttpRoute, (request, machines) => machines.operation(op, request));
}

/**
 * Server-sent events for everything that changes: machines created or deleted, state changes,
 * finished instructions (their seq and whether they failed; the result is one request away).
 */
function streamEvents(machines: CallerMachines, res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
  res.write(': perennial events\n\n');
  const stop = machines.watch((event) => res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`));
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), EVENT_HEARTBEAT_MS);
  return new Promise((resolve) => {
    res.on('close', () => {
      clearInterval(heartbeat);
      stop();
      resolve();
    });
  });
}
