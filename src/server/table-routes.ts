import { z } from 'zod';
import { fieldsInQuery, type HttpRoute } from '../shared/operations.ts';
import { InvalidRequestError } from '../shared/requests.ts';
import type { CallerMachines } from './caller-machines.ts';
import { machineName, type Handler } from './forevervm-api.ts';
import { pathSegment, readJson, requestUrl, sendJson } from './http-io.ts';

/**
 * The route of a request a table defines (the machines' operations, the team's requests): its
 * path's segments, then its query or body, make the request's fields, which `work` checks and
 * carries out for the caller; the answer is wrapped where the table says.
 */
export function tableRoute(
  definition: HttpRoute,
  work: (fields: Record<string, unknown>, machines: CallerMachines) => Promise<unknown>,
): [string, RegExp, Handler] {
  const { method, path, request: schema, field } = definition;
  const segments = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
  const pattern = new RegExp(`^${path.replace(/\//g, '\\/').replace(/\{\w+\}/g, '([^/]+)')}$`);
  return [
    method,
    pattern,
    async (req, res, raw, machines) => {
      const fields = fieldsInQuery(method) ? fromQuery(requestUrl(req).searchParams, schema) : await readJson(req);
      if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw new InvalidRequestError('The request body must be a JSON object');
      const inPath = Object.fromEntries(segments.map((segment, i) => [segment, segment === 'name' ? machineName(raw[i]!) : pathSegment(raw[i]!, segment)]));
      const result = await work({ ...fields, ...inPath }, machines);
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
