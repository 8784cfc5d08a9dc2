import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CallerMachines } from './caller-machines.ts';
import { ExecBody, ListBody, MachineName, NewMachineBody, parseRequest } from '../shared/requests.ts';
import { KEEPALIVE_HEADER, type ExecResponse, type ForeverVMMachine, type MachineInfo, type ResultResponse, type StreamResultLine } from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { pathSegment, readJson, sendJson } from './http-io.ts';

/** Silence after which a result stream that asked for it gets a blank line. */
const KEEPALIVE_MS = 10_000;

/** A machine name from a path, or 404 (it cannot name a machine), or 400 (it does not decode). */
export function machineName(raw: string): string {
  const name = pathSegment(raw, 'machine name');
  if (!MachineName.safeParse(name).success) throw new ForeverVMError(404, 'MachineNotFound', `No machine named ${JSON.stringify(name)}`, name);
  return name;
}

export function toForeverVMMachine(info: MachineInfo): ForeverVMMachine {
  return {
    name: info.name,
    created_at: info.createdAt,
    running: info.state !== 'swapped',
    has_pending_instruction: info.pendingInstructions > 0,
    expires_at: null,
    tags: info.tags,
  };
}

/** A route's work: `machines` are those the request's caller may reach. */
export type Handler = (req: IncomingMessage, res: ServerResponse, params: string[], machines: CallerMachines) => Promise<void>;

/** The ForeverVM endpoints (`forevervm-api.md`), as [method, path pattern, handler]. */
export function foreverVMRoutes(keepAliveMs = KEEPALIVE_MS): Array<[string, RegExp, Handler]> {
  return [
    ['GET', /^\/v1\/whoami$/, async (_req, res, _params, machines) => sendJson(res, 200, await machines.whoami())],
    [
      'POST',
      /^\/v1\/machine\/new$/,
      async (req, res, _params, machines) => {
        const info = await machines.create(parseRequest(NewMachineBody, await readJson(req)));
        sendJson(res, 200, { machine_name: info.name });
      },
    ],
    [
      'POST',
      /^\/v1\/machine\/list$/,
      async (req, res, _params, machines) => {
        const body = parseRequest(ListBody, await readJson(req));
        sendJson(res, 200, { machines: (await machines.listEverywhere(body.tags)).map(toForeverVMMachine) });
      },
    ],
    [
      'GET',
      /^\/v1\/machine\/list$/,
      async (_req, res, _params, machines) => sendJson(res, 200, { machines: (await machines.listEverywhere()).map(toForeverVMMachine) }),
    ],
    [
      'POST',
      /^\/v1\/machine\/([^/]+)\/exec$/,
      async (req, res, [raw], machines) => {
        const name = machineName(raw!);
        const body = parseRequest(ExecBody, await readJson(req));
        const { seq, interrupted } = await machines.exec(name, body.instruction.code, {
          timeoutSeconds: body.instruction.timeout_seconds,
          interrupt: body.interrupt,
        });
        const answer: ExecResponse = { instruction_seq: seq, machine: name, ...(interrupted ? { interrupted: true as const } : {}) };
        sendJson(res, 200, answer);
      },
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/exec\/(\d{1,15})\/result$/,
      async (_req, res, [raw, seq], machines) => {
        const name = machineName(raw!);
        const answer: ResultResponse = { instruction_id: Number(seq), result: await machines.result(name, Number(seq)) };
        sendJson(res, 200, answer);
      },
    ],
    [
      'GET',
      /^\/v1\/machine\/([^/]+)\/exec\/(\d{1,15})\/stream-result$/,
      async (req, res, [raw, seqText], machines) => {
        const name = machineName(raw!);
        const seq = Number(seqText);
        await machines.require(name, 'read');
        if (!machines.manager.instruction(name, seq)) await machines.result(name, seq); // 404 before streaming
        res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
        let lastWrite = Date.now();
        const write = (text: string) => {
          lastWrite = Date.now();
          if (!res.destroyed) res.write(text);
        };
        // Blank lines only for clients that asked: other NDJSON readers may not skip them.
        const keepAlive = req.headers[KEEPALIVE_HEADER] ? setInterval(() => Date.now() - lastWrite >= keepAliveMs && write('\n'), keepAliveMs / 4) : undefined;
        const line = (message: StreamResultLine) => write(JSON.stringify(message) + '\n');
        try {
          const result = await machines.follow(name, seq, (chunk) => line({ type: 'output', chunk, instruction_id: seq }));
          line({ type: 'result', instruction_id: seq, result });
        } finally {
          clearInterval(keepAlive);
        }
        res.end();
      },
    ],
  ];
}
