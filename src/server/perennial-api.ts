import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import type { MachineManager } from '../machines/machine-manager.ts';
import { performOperation } from '../machines/machine-operations.ts';
import { fieldsInQuery, OPERATION_NAMES, OPERATIONS, type Operation, type OperationName } from '../shared/operations.ts';
import { InvalidRequestError } from '../shared/requests.ts';
import { machineName, type Handler } from './forevervm-api.ts';
import { pathSegment, readJson, requestUrl, sendJson } from './http-io.ts';
import { statusReport } from './machine-answers.ts';

/** How often an idle event stream gets a comment, so that proxies and clients keep it open. */
const EVENT_HEARTBEAT_MS = 15_000;

/** Perennial's own endpoints under /v1, which its client detects and degrades around: every operation of the table, the status and the event stream. */
export function perennialRoutes(manager: MachineManager): Array<[string, RegExp, Handler]> {
  return [
    ...OPERATION_NAMES.map((op) => operationRoute(manager, op)),
    ['GET', /^\/v1\/status$/, async (_req, res) => sendJson(res, 200, await statusReport(manager))],
    ['GET', /^\/v1\/events$/, async (_req, res) => streamEvents(manager, res)],
  ];
}

/**
 * The route of operation `op`: its path's segments, then its query or body, make its request,
 * checked against its schema; the answer is the machines layer's result, wrapped where the table says.
 */
function operationRoute<K extends OperationName>(manager: MachineManager, op: K): [string, RegExp, Handler] {
  const { method, path, request: schema, field } = OPERATIONS[op] as unknown as Operation<unknown[], z.ZodObject, unknown>;
  const segments = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
  const pattern = new RegExp(`^${path.replace(/\//g, '\\/').replace(/\{\w+\}/g, '([^/]+)')}$`);
  return [
    method,
    pattern,
    async (req, res, raw) => {
      const fields = fieldsInQuery(method) ? fromQuery(requestUrl(req).searchParams, schema) : await readJson(req);
      if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw new InvalidRequestError('The request body must be a JSON object');
      const inPath = Object.fromEntries(segments.map((segment, i) => [segment, segment === 'name' ? machineName(raw[i]!) : pathSegment(raw[i]!, segment)]));
      const result = await performOperation(manager, op, { ...fields, ...inPath });
      sendJson(res, 200, field ? { [field]: result } : result);
    },
  ];
}

/** A query's parameters as the fields of `schema`: repeated for an array, else the first. */
function fromQuery(params: URLSearchParams, schema: z.ZodObject): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, type] of Object.entries(schema.shape)) {
    if (!params.has(key)) continue;
    fields[key] = isArray(type as z.ZodType) ? params.getAll(key) : params.get(key);
  }
  return fields;
}

function isArray(type: z.ZodType): boolean {
  const inner = type instanceof z.ZodOptional || type instanceof z.ZodDefault ? (type.def.innerType as z.ZodType) : type;
  return inner instanceof z.ZodArray;
}

/**
 * Server-sent events for everything that changes: machines created or deleted, state changes,
 * finished instructions (their seq and whether they failed; the result is one request away).
 */
function streamEvents(manager: MachineManager, res: ServerResponse): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
  res.write(': perennial events\n\n');
  const stop = manager.watch((event) => res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`));
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), EVENT_HEARTBEAT_MS);
  return new Promise((resolve) => {
    res.on('close', () => {
      clearInterval(heartbeat);
      stop();
      resolve();
    });
  });
}
