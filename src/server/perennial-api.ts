import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import type { ManagerEvent, MachineManager } from '../machines/machine-manager.ts';
import type { MachineEvent } from '../shared/types.ts';
import { VERSION } from '../shared/version.ts';
import { machineName, parse, type Handler } from './forevervm-api.ts';
import { readJson, sendJson } from './http-io.ts';

const PackagesBody = z.object({ packages: z.array(z.string()).min(1).max(64) });
const CodeBody = z.object({ code: z.string() });
const WriteFileBody = z.object({
  path: z.string().min(1).max(4096),
  content: z.string(),
  encoding: z.enum(['utf8', 'base64']).default('utf8'),
});

/** How often an idle event stream gets a comment, so that proxies and clients keep it open. */
const EVENT_HEARTBEAT_MS = 15_000;

/** Perennial's own endpoints under /v1, which its client detects and degrades around. */
export function perennialRoutes(manager: MachineManager): Array<[string, RegExp, Handler]> {
  const query = (url: string | undefined, key: string) => new URL(url ?? '/', 'http://x').searchParams.get(key);
  return [
    ['GET', /^\/v1\/machine\/([^/]+)$/, async (_req, res, [raw]) => sendJson(res, 200, manager.get(machineName(raw!)))],
    [
      'DELETE',
      /^\/v1\/machine\/([^/]+)$/,
      async (_req, res, [raw]) => {
        await manager.delete(machineName(raw!));
        sendJson(res, 200, { deleted: true });
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
    ['GET', /^\/v1\/machine\/([^/]+)\/variables$/, async (_req, res, [raw]) => sendJson(res, 200, { variables: await manager.variables(machineName(raw!)) })],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/variables\/([^/]+)$/,
      async (_req, res, [raw, variable]) => sendJson(res, 200, await manager.variable(machineName(raw!), decodeURIComponent(variable!))),
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/history$/,
      async (req, res, [raw]) => {
        const last = query(req.url, 'last');
        const count = last === null ? undefined : Number(last);
        sendJson(res, 200, { history: await manager.history(machineName(raw!), count !== undefined && Number.isInteger(count) && count > 0 ? count : undefined) });
      },
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/packages$/,
      async (req, res, [raw]) => {
        const body = parse(PackagesBody, await readJson(req));
        sendJson(res, 200, { installed: await manager.installPackages(machineName(raw!), body.packages) });
      },
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/is-complete$/,
      async (req, res, [raw]) => sendJson(res, 200, { status: await manager.isComplete(machineName(raw!), parse(CodeBody, await readJson(req)).code) }),
    ],
    ['GET', /^\/v1\/machine\/([^/]+)\/files$/, async (req, res, [raw]) => sendJson(res, 200, await manager.listFiles(machineName(raw!), query(req.url, 'path') ?? ''))],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/files\/content$/,
      async (req, res, [raw]) => sendJson(res, 200, await manager.readFile(machineName(raw!), parse(z.string().min(1), query(req.url, 'path')))),
    ],
    [
      'PUT',
      /^\/v1\/machine\/([^/]+)\/files\/content$/,
      async (req, res, [raw]) => {
        const body = parse(WriteFileBody, await readJson(req));
        const content = body.encoding === 'utf8' ? Buffer.from(body.content, 'utf8').toString('base64') : body.content;
        sendJson(res, 200, await manager.writeFile(machineName(raw!), body.path, content));
      },
    ],
    [
      'GET',
      /^\/v1\/status$/,
      async (_req, res) => {
        const machines = manager.list();
        sendJson(res, 200, {
          version: VERSION,
          pid: process.pid,
          dataDir: manager.dataDir,
          machines: {
            total: machines.length,
            warm: machines.filter((m) => m.state !== 'swapped').length,
            swapped: machines.filter((m) => m.state === 'swapped').length,
          },
          defaultEngine: manager.defaultEngine,
          engines: manager.engineStatus(),
        });
      },
    ],
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
  const listener = (event: ManagerEvent) => {
    const data: MachineEvent = event.type === 'instruction' ? { type: event.type, name: event.name, seq: event.seq, error: 'error' in event.result } : event;
    res.write(`event: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`);
  };
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
