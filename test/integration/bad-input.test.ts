/**
 * Bad input to every route of a real local server: odd machine names, traversal, malformed
 * percent-encoding, broken and deeply nested JSON, binary, wrong types, bad tokens. Seeded
 * ($PERENNIAL_FUZZ_SEED repeats a run), bounded in count and time. Every answer is a 4xx or a
 * success, never a 5xx or a reset connection, and a machine's state comes through it whole.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { foreverVMRoutes } from '../../src/server/forevervm-api.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { perennialRoutes } from '../../src/server/perennial-api.ts';
import { teamRoutes } from '../../src/server/team-api.ts';
import { HttpClient } from '../../src/client/http-client.ts';
import { MAX_JSON_DEPTH } from '../../src/shared/requests.ts';
import { WebSocket } from 'ws';
import { TEST_PYTHON, tempDataDir, valueOf } from '../helpers/machines.ts';

const SEED = Number(process.env.PERENNIAL_FUZZ_SEED ?? 20261126);
const REQUESTS = 3000;
const BUDGET_MS = 45_000;

/** mulberry32: small, seeded, good enough to pick inputs. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Attempt {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** A stream that stays open: its headers are the answer. */
  stream: boolean;
}

interface Answer {
  status?: number;
  body?: string;
  error?: string;
}

function send(url: URL, attempt: Attempt): Promise<Answer> {
  return new Promise((resolve) => {
    const req = request({ host: url.hostname, port: url.port, method: attempt.method, path: attempt.path, headers: attempt.headers }, (res) => {
      if (attempt.stream && res.statusCode === 200) {
        res.destroy();
        resolve({ status: 200 });
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk.length + body.length > 4000 ? '' : chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
      res.on('error', (error) => resolve({ error: error.message }));
    });
    req.setTimeout(20_000, () => req.destroy(new Error('no answer within 20 s')));
    req.on('error', (error) => resolve({ error: error.message }));
    req.end(attempt.body);
  });
}

/** Every route's method and pattern (the handlers are not called). */
function allRoutes(): Array<{ method: string; source: string }> {
  return [...foreverVMRoutes(), ...perennialRoutes(), ...teamRoutes()].map(([method, pattern]) => ({ method, source: pattern.source }));
}

/**
 * Sends up to REQUESTS random bad requests (within BUDGET_MS) to `routes` and the MCP endpoints,
 * with `token` among broken credentials; a share of them (`onMachineRate`, on routes `mayTouch`
 * allows) name `machine`. Answers what went wrong, by `judge` (default: a 5xx or no answer), and
 * how many were sent.
 */
async function fuzz(
  serverUrl: string,
  {
    token,
    machine,
    routes,
    onMachineRate,
    mayTouch,
    judge = () => undefined,
  }: {
    token: string;
    machine: string;
    routes: Array<{ method: string; source: string }>;
    onMachineRate: number;
    mayTouch: (method: string, source: string) => boolean;
    /** What is wrong with an answer (beyond a 5xx or none), or undefined. */
    judge?: (answer: Answer, attempt: Attempt, onMachine: boolean) => string | undefined;
  },
): Promise<{ failures: string[]; sent: number }> {
  const random = generator(SEED);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const url = new URL(serverUrl);
  const mcp = [
    { method: 'POST', source: '^\\/mcp$' },
    { method: 'GET', source: '^\\/mcp$' },
    { method: 'DELETE', source: '^\\/mcp$' },
    { method: 'GET', source: '^\\/sse$' },
    { method: 'POST', source: '^\\/messages$' },
  ];
  const names = [
    '%ff%fe',
    '%',
    '%zz',
    '%e2%98',
    '..',
    '..%2f..%2fetc%2fpasswd',
    '%2e%2e',
    '%00',
    'a'.repeat(5000),
    '%e2%98%83',
    'new',
    'list',
    '%25',
    "'%20OR%201=1",
    '%5C..%5C',
    'CON',
    '.snapshot',
  ];
  const nested = (depth: number, open: string, close: string) => open.repeat(depth) + close.repeat(depth);
  const bodies: Array<() => string | Buffer> = [
    () => '{"a":',
    () => '{"instruction": {"code": ',
    () => nested(20_000, '[', ']'),
    () => nested(20_000, '{"a":', '}').replace(/:}$/, ':1}'),
    () => '{"a":'.repeat(MAX_JSON_DEPTH + 1) + '1' + '}'.repeat(MAX_JSON_DEPTH + 1),
    () => Buffer.from(Array.from({ length: 64 }, () => Math.floor(random() * 256))),
    () => '{"instruction": 5}',
    () => '{"instruction": {"code": ["x"]}, "timeout_seconds": "soon"}',
    () => '{"tags": {"k": 5}, "engine": 7, "memory_mb": -1}',
    () => '{"checkpoint": {"id": null}, "label": 12}',
    () => '{"packages": "numpy; rm -rf /"}',
    () => '{"code": 5, "cursor": "end"}',
    () => '{"path": {"a": 1}, "content": 5}',
    () => '[]',
    () => 'null',
    () => '"text"',
    () => '1e400',
    () => '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}',
    () => '"\\ud800"',
    () => '{"jsonrpc": "2.0", "method": 5, "id": {}}',
    () => '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "run-python-in-repl", "arguments": {"replId": "%ff", "pythonCode": 5}}, "id": 1}',
    () => '',
  ];
  const auths = [
    () => ({ authorization: `Bearer ${token}` }),
    () => ({ authorization: `Bearer ${token}` }),
    () => ({ authorization: `Bearer ${token}` }),
    () => ({}),
    () => ({ authorization: 'Bearer' }),
    () => ({ authorization: `Bearer ${token}x` }),
    () => ({ authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }),
    () => ({ authorization: `Bearer ${'t'.repeat(8000)}` }),
  ];
  const failures: string[] = [];
  const started = Date.now();
  let sent = 0;
  for (; sent < REQUESTS && Date.now() - started < BUDGET_MS; sent++) {
    const route = random() < 0.9 ? pick(routes) : pick(mcp);
    const onMachine = random() < onMachineRate && mayTouch(route.method, route.source);
    let path = route.source
      .replace(/^\^|\$$/g, '')
      .replaceAll('\\/', '/')
      .replace('([^/]+)', onMachine ? machine : pick(names))
      .replace('([^/]+)', pick(names))
      .replace('(\\d{1,15})', String(Math.floor(random() * 10 ** (1 + Math.floor(random() * 15)))));
    const twist = random();
    if (twist < 0.1) path += `?tag=${pick(names)}&last=-1&path=%00&sessionId=${pick(names)}&inlineImages=${pick(names)}`;
    else if (twist < 0.15) path = path.replace('/v1/', '//v1//');
    else if (twist < 0.2) path = `http://[${pick(names)}${path}`;
    // Another method on the machine with state could be a good request (DELETE deletes it).
    const method = onMachine || random() < 0.9 ? route.method : pick(['PUT', 'PATCH', 'OPTIONS', 'GET', 'POST', 'DELETE']);
    const body = ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method) ? pick(bodies)() : undefined;
    const headers: Record<string, string> = { host: url.host, ...pick(auths)() };
    // Framed, as every client frames a body (Node's own sends a DELETE's without a length).
    if (body !== undefined) {
      headers['content-type'] = pick(['application/json', 'text/plain', 'application/octet-stream']);
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    if (route.source.includes('mcp')) headers.accept = 'application/json, text/event-stream';
    const attempt: Attempt = {
      method,
      path,
      headers,
      ...(body === undefined ? {} : { body: Buffer.from(body) }),
      stream: /events|sse|mcp/.test(route.source) && method === 'GET',
    };
    const answer = await send(url, attempt);
    const what = `${method} ${path.slice(0, 120)} ${body === undefined ? '' : String(body).slice(0, 60)}`;
    if (answer.error) failures.push(`${what}: ${answer.error}`);
    else if (answer.status! >= 500) failures.push(`${what}: ${answer.status} ${answer.body}`);
    else {
      const wrong = judge(answer, attempt, onMachine);
      if (wrong) failures.push(`${what}: ${wrong}`);
    }
  }
  return { failures, sent };
}

describe('bad input to every route', { timeout: 360_000 }, () => {
  let server: LocalServer;
  let cleanup: () => Promise<void>;
  let token: string;
  let machine: string;

  before(async () => {
    let dir: string;
    ({ dir, cleanup } = await tempDataDir());
    server = await LocalServer.start({ dataDir: dir, defaultEngine: 'python', saveDelayMs: 200 });
    token = server.token;
    machine = (await server.manager.create({ engine: 'python', python: TEST_PYTHON })).name;
    await server.manager.run(machine, 'x = 41');
  });
  after(async () => {
    await server.close();
    await cleanup();
  });

  it(`answers ${REQUESTS} random bad requests (seed ${SEED}) with a 4xx or a success, and the machine keeps its state`, async () => {
    /** Read-only routes, or ones whose bodies here are always refused: the machine with state may take them. */
    const harmless = (method: string, source: string) =>
      (method === 'GET' && !source.includes('exec') && !source.includes('events')) || /\\\/(exec|complete|inspect|is-complete)\$$/.test(source);
    const { failures, sent } = await fuzz(server.url, { token, machine, routes: allRoutes(), onMachineRate: 0.2, mayTouch: harmless });
    assert.deepEqual(failures, [], `seed ${SEED}, ${sent} requests`);
    assert.ok(sent >= 100, `${sent} requests within the time budget`);

    assert.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was polluted');
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    const { result } = await server.manager.run(machine, 'x + 1');
    assert.equal('value' in result && result.value, '42');
  });

  it("a machine name that is not percent-encoding (over HTTP and WebSocket), and a body nested past the limit, are 400s (for MCP, the protocol's parse error)", async () => {
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const fork = await fetch(`${server.url}/v1/machine/%ff%fe/fork`, { method: 'POST', headers: auth });
    assert.equal(fork.status, 400);
    assert.match(((await fork.json()) as { message: string }).message, /machine name in the path is not valid percent-encoding/);
    const deep = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...auth, accept: 'application/json, text/event-stream' },
      body: '['.repeat(20_000) + ']'.repeat(20_000),
    });
    assert.equal(deep.status, 400);
    const answer = (await deep.json()) as { jsonrpc: string; error: { code: number; message: string } };
    assert.equal(answer.error.code, -32700);
    assert.match(answer.error.message, new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`));
    const refused = await new Promise<number>((resolve, reject) => {
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/machine/%ff/repl`, { headers: { authorization: `Bearer ${token}` } });
      socket.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
      socket.on('open', () => reject(new Error('the socket opened')));
      socket.on('error', () => undefined);
    });
    assert.equal(refused, 400);
    const broken = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...auth, accept: 'application/json, text/event-stream' }, body: '{"a":' });
    assert.equal(broken.status, 400);
    assert.equal(((await broken.json()) as { error: { code: number } }).error.code, -32700);
  });
});

describe("another person's key on a team's server, at random on every route", { timeout: 360_000 }, () => {
  let server: LocalServer;
  let cleanup: () => Promise<void>;
  let alice: HttpClient;
  let bobKey: string;
  let machine: string;

  before(async () => {
    let dir: string;
    ({ dir, cleanup } = await tempDataDir());
    server = await LocalServer.start({ dataDir: dir, defaultEngine: 'sandbox', saveDelayMs: 200 });
    const operator = new HttpClient({ baseUrl: server.url, token: server.token });
    alice = new HttpClient({ baseUrl: server.url, token: (await operator.team('init', { owner: 'alice' })).key });
    await operator.close();
    await alice.team('addPerson', { name: 'bob' });
    bobKey = (await alice.team('createKey', { person: 'bob', name: 'fuzz', scopes: ['read', 'run', 'manage'] })).key;
    machine = (await alice.create({ name: 'alices-analysis' })).name;
    await alice.run(machine, 'x = 41');
  });
  after(async () => {
    await alice.close();
    await server.close();
    await cleanup();
  });

  it(`finds no machine of the first person: every request naming it is a 404, no answer shows it, and it keeps its state (seed ${SEED})`, async () => {
    const before = (await alice.history(machine)).length;
    const { failures, sent } = await fuzz(server.url, {
      token: bobKey,
      machine,
      routes: allRoutes(),
      // Bob may send anything to it: every route, any method, any body.
      onMachineRate: 0.5,
      mayTouch: () => true,
      judge: (answer, attempt) => {
        const withKey = attempt.headers.authorization === `Bearer ${bobKey}`;
        const named = attempt.path.includes(`/machine/${machine}`);
        // A request that names it is told it does not exist (or that the request is malformed), and nothing of it.
        if (named && withKey && ![400, 404, 405].includes(answer.status!)) return `answered ${answer.status} on alice's machine: ${answer.body?.slice(0, 200)}`;
        if (/"owner":"alice"|"value":"41"/.test(answer.body ?? '')) return `shows alice's machine: ${answer.body!.slice(0, 200)}`;
        // One that does not name it (listings, the status, events, MCP) never mentions it.
        if (!attempt.path.includes(machine) && answer.body?.includes(machine)) return `mentions alice's machine: ${answer.body.slice(0, 200)}`;
        return undefined;
      },
    });
    assert.deepEqual(failures, [], `seed ${SEED}, ${sent} requests`);
    assert.ok(sent >= 100, `${sent} requests within the time budget`);
    assert.equal(valueOf((await alice.run(machine, 'x + 1')).result), '42');
    assert.equal((await alice.history(machine)).length, before + 1, "nothing bob sent ran on alice's machine");
  });
});
