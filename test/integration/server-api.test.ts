import assert from 'node:assert/strict';
import { createServer, request } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { ForeverVMClient } from '../../src/client/forevervm-client.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { KEEPALIVE_HEADER, type ReplServerMessage } from '../../src/shared/types.ts';
import type { ServerInfo } from '../../src/platform/server-info.ts';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';
import { testClusterOf } from '../helpers/test-cluster.ts';

/** Raw HTTP, so that any header (Host, Origin) can be sent as it is. */
function raw(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** One request on an open connection, and its response's head and body, or the connection's end before them. */
function exchange(socket: Socket, request: string): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      const end = text.indexOf('\r\n\r\n');
      const length = Number(/^content-length: *(\d+)/im.exec(text)?.[1] ?? -1);
      if (end < 0 || length < 0 || text.length < end + 4 + length) return;
      done();
      resolve({ head: text.slice(0, end), body: text.slice(end + 4, end + 4 + length) });
    };
    const onEnd = () => {
      done();
      reject(new Error('the server closed the connection before it answered'));
    };
    const done = () => {
      socket.off('data', onData).off('close', onEnd).off('error', onEnd);
    };
    socket.on('data', onData).on('close', onEnd).on('error', onEnd);
    socket.write(request);
  });
}

describe('local server: ForeverVM API over HTTP and WebSocket', { timeout: 180_000 }, () => {
  let server: LocalServer;
  let cleanup: () => Promise<void>;
  let dataDir: string;
  let auth: Record<string, string>;

  /** JSON request with the token. */
  async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const response = await fetch(server.url + path, {
      method,
      headers: { ...auth, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  }

  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir());
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir, defaultEngine: 'python', saveDelayMs: 200, heartbeatMs: 1000, ...(await testClusterOf(dataDir)) });
    auth = { authorization: `Bearer ${server.token}` };
  });
  after(async () => {
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await cleanup();
  });

  it('writes server.json (0600) with its pid, url and token, and answers /health without a token', async () => {
    const path = join(dataDir, 'server.json');
    const info = JSON.parse(await readFile(path, 'utf8')) as ServerInfo;
    assert.equal(info.pid, process.pid);
    assert.equal(info.url, server.url);
    assert.equal(info.token, server.token);
    assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal((await stat(join(dataDir, 'server-token'))).mode & 0o777, 0o600);
    assert.deepEqual(await (await fetch(server.url + '/health')).json(), { ok: true });
  });

  it('answers a request that reaches a kept-alive connection after the idle time it announced, as a late server reads it', async () => {
    // A busy or CPU-starved server reads a request that came in time only after its keep-alive
    // time (40 agents starting machines at once: `fetch failed`). The client here is late
    // instead; to the connection it is the same.
    const { hostname, port } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    try {
      await new Promise((resolve) => socket.once('connect', resolve));
      const health = `GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`;
      const first = await exchange(socket, health);
      const announced = Number(/^keep-alive: *timeout=(\d+)/im.exec(first.head)?.[1]);
      assert.ok(announced > 0, first.head);
      await sleep(announced * 1000 + 1000);
      assert.deepEqual(JSON.parse((await exchange(socket, health)).body), { ok: true });
    } finally {
      socket.destroy();
    }
  });

  it('refuses requests without the token (401), to a foreign Host or from a foreign Origin (403)', async () => {
    assert.equal((await raw(server.url + '/v1/whoami')).status, 401);
    assert.equal((await raw(server.url + '/v1/whoami', { headers: { authorization: 'Bearer wrong' } })).status, 401);
    const foreignHost = await raw(server.url + '/v1/whoami', { headers: { ...auth, host: 'evil.example:80' } });
    assert.equal(foreignHost.status, 403);
    assert.equal(JSON.parse(foreignHost.body).code, 'Forbidden');
    assert.equal((await raw(server.url + '/v1/whoami', { headers: { ...auth, origin: 'http://evil.example' } })).status, 403);
    assert.equal((await raw(server.url + '/v1/whoami', { headers: { ...auth, origin: server.url } })).status, 200);
    assert.equal((await raw(`${server.url}/v1/whoami?_forevervm_jwt=${server.token}`)).status, 200);
  });

  it('answers malformed, invalid and oversize requests with 400 and 413, and stays up', async () => {
    const malformed = await raw(server.url + '/v1/machine/new', { method: 'POST', headers: auth, body: '{"tags": ' });
    assert.equal(malformed.status, 400);
    assert.match(JSON.parse(malformed.body).message, /not valid JSON/);
    const invalid = await api('POST', '/v1/machine/new', { tags: { team: 5 } });
    assert.equal(invalid.status, 400);
    assert.equal(invalid.json.code, 'BadRequest');
    // The limits every surface shares (the MCP tools and the manager check the same schema).
    for (const [body, message] of [
      [{ memory_mb: 8 }, 'memory_mb: memory is at least 64 MiB'],
      [{ tags: { 'no spaces': 'x' } }, 'tags: bad tag key "no spaces"'],
      [{ engine: 'jvm' }, 'engine: Invalid option'],
    ] as const) {
      const refused = await api('POST', '/v1/machine/new', body);
      assert.equal(refused.status, 400);
      assert.match(refused.json.message as string, new RegExp(`^Invalid request: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    }
    const badPackage = await api('POST', '/v1/machine/new', {});
    const refusedPackage = await api('POST', `/v1/machine/${badPackage.json.machine_name}/packages`, { packages: ['--index-url=http://elsewhere'] });
    assert.equal(refusedPackage.status, 400);
    assert.match(refusedPackage.json.message as string, /packages\.0: not a package to install: "--index-url=http:\/\/elsewhere"/);
    const notObject = await api('POST', `/v1/machine/${badPackage.json.machine_name}/rollback`, ['1']);
    assert.equal(notObject.status, 400);
    assert.equal(notObject.json.message, 'The request body must be a JSON object');
    const huge = await raw(server.url + '/v1/machine/new', { method: 'POST', headers: auth, body: Buffer.alloc(17 * 1024 * 1024, 32) });
    assert.equal(huge.status, 413);
    assert.equal((await api('GET', '/v1/machine/does-not-exist')).status, 404);
    assert.equal((await api('GET', '/v1/nothing-here')).status, 404);
    assert.equal((await api('GET', '/v1/whoami')).status, 200);
  });

  it('creates, lists (POST with a tag filter, and GET) and runs instructions with results by seq', async () => {
    const { json: created } = await api('POST', '/v1/machine/new', { tags: { team: 'http' } });
    const name = created.machine_name as string;
    assert.match(name, /^[a-z]+-[a-z]+(-\d+)?$/);
    await api('POST', '/v1/machine/new', { tags: { team: 'other' } });
    const listed = (await api('POST', '/v1/machine/list', { tags: { team: 'http' } })).json.machines as Array<Record<string, unknown>>;
    assert.deepEqual(
      listed.map((m) => m.name),
      [name],
    );
    assert.deepEqual(Object.keys(listed[0]!).sort(), ['created_at', 'expires_at', 'has_pending_instruction', 'name', 'running', 'tags']);
    assert.equal(((await api('GET', '/v1/machine/list')).json.machines as unknown[]).length >= 2, true);

    const first = await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'x = 40\nprint("one")\nx + 2' } });
    assert.deepEqual(first.json, { instruction_seq: 0, machine: name });
    const result = await api('GET', `/v1/machine/${name}/exec/0/result`);
    assert.deepEqual(result.json, {
      instruction_id: 0,
      result: { value: '42', data: null, runtime_ms: (result.json.result as { runtime_ms: number }).runtime_ms },
    });
    const second = await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: '"done"' } });
    assert.equal(second.json.instruction_seq, 1);
    assert.equal(((await api('GET', `/v1/machine/${name}/exec/1/result`)).json.result as { value: string }).value, "'done'");
    assert.equal((await api('GET', `/v1/machine/${name}/exec/7/result`)).status, 404);
  });

  it('streams results as NDJSON: one chunk per line with seq from 0, then the result', async () => {
    const name = (await api('POST', '/v1/machine/new', {})).json.machine_name as string;
    await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'import sys\nprint("a\\nb")\nprint("err", file=sys.stderr)\n3' } });
    const response = await fetch(`${server.url}/v1/machine/${name}/exec/0/stream-result`, { headers: auth });
    assert.equal(response.headers.get('content-type'), 'application/x-ndjson');
    const lines = (await response.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(lines.slice(0, 3), [
      { type: 'output', chunk: { stream: 'stdout', data: 'a', seq: 0 }, instruction_id: 0 },
      { type: 'output', chunk: { stream: 'stdout', data: 'b', seq: 1 }, instruction_id: 0 },
      { type: 'output', chunk: { stream: 'stderr', data: 'err', seq: 2 }, instruction_id: 0 },
    ]);
    assert.equal(lines[3]!.type, 'result');
    assert.equal((lines[3]!.result as { value: string }).value, '3');
  });

  it('times out with "Timed out" and keeps the machine usable; exec with interrupt stops what runs', async () => {
    const name = (await api('POST', '/v1/machine/new', {})).json.machine_name as string;
    await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'kept = 1' } });
    await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'while True: pass', timeout_seconds: 1 } });
    assert.match(((await api('GET', `/v1/machine/${name}/exec/1/result`)).json.result as { error: string }).error, /Timed out/);
    await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'import time; time.sleep(60)' } });
    await eventually(async () => ((await api('GET', `/v1/machine/${name}`)).json.state as string) === 'busy', 10_000, 'busy');
    const urgent = await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'kept + 1' }, interrupt: true });
    assert.deepEqual(urgent.json, { instruction_seq: 3, machine: name, interrupted: true });
    assert.match(((await api('GET', `/v1/machine/${name}/exec/2/result`)).json.result as { error: string }).error, /KeyboardInterrupt/);
    assert.equal(((await api('GET', `/v1/machine/${name}/exec/3/result`)).json.result as { value: string }).value, '2');
  });

  it('runs the WebSocket REPL: connected first, then exec_received, output and result; a reconnect keeps state', async () => {
    const wsUrl = server.url.replace('http', 'ws');
    const open = (path: string, headers: Record<string, string> = auth) => {
      const socket = new WebSocket(wsUrl + path, { headers });
      const messages: ReplServerMessage[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(data.toString()) as ReplServerMessage));
      return { socket, messages };
    };
    const first = open('/v1/machine/new/repl');
    await eventually(() => first.messages.length > 0, 10_000, 'connected');
    const connected = first.messages[0]!;
    assert.equal(connected.type, 'connected');
    const name = (connected as { machine_name: string }).machine_name;
    first.socket.send(JSON.stringify({ type: 'exec', instruction: { code: 'total = 5\nprint("hi")\ntotal * 2' }, request_id: 0 }));
    await eventually(() => first.messages.some((m) => m.type === 'result'), 20_000, 'result');
    assert.deepEqual(
      first.messages.slice(1).map((m) => m.type),
      ['exec_received', 'output', 'result'],
    );
    assert.deepEqual(first.messages[1], { type: 'exec_received', seq: 0, request_id: 0 });
    assert.deepEqual(first.messages[2], { type: 'output', chunk: { stream: 'stdout', data: 'hi', seq: 0 }, instruction_id: 0 });
    assert.equal((first.messages[3] as { result: { value: string } }).result.value, '10');
    first.socket.send('not json');
    await eventually(() => first.messages.some((m) => m.type === 'error'), 5000, 'error');
    first.socket.close();

    // As the JS SDK does: the token in the query, reconnecting to the machine by name.
    const again = open(`/v1/machine/${name}/repl?_forevervm_jwt=${server.token}`, {});
    await eventually(() => again.messages.length > 0, 10_000, 'connected again');
    again.socket.send(JSON.stringify({ type: 'exec', instruction: { code: 'total + 1' }, request_id: 0 }));
    await eventually(() => again.messages.some((m) => m.type === 'result'), 20_000, 'result again');
    assert.equal((again.messages.find((m) => m.type === 'result') as { result: { value: string } }).result.value, '6');
    assert.equal((again.messages.find((m) => m.type === 'exec_received') as { seq: number }).seq, 1);
    again.socket.close();
  });

  it('takes exec messages sent before connected, as the official SDK does, in order; for new and swapped machines', async () => {
    const wsUrl = server.url.replace('http', 'ws');
    /** Sends `codes` the moment the socket opens and resolves once each has its result. */
    const execOnOpen = (path: string, codes: string[]) =>
      new Promise<ReplServerMessage[]>((resolve, reject) => {
        const socket = new WebSocket(wsUrl + path, { headers: auth });
        const messages: ReplServerMessage[] = [];
        socket.on('open', () => codes.forEach((code, i) => socket.send(JSON.stringify({ type: 'exec', instruction: { code }, request_id: i }))));
        socket.on('message', (data) => {
          messages.push(JSON.parse(data.toString()) as ReplServerMessage);
          if (messages.filter((m) => m.type === 'result').length === codes.length) {
            socket.close();
            resolve(messages);
          }
        });
        socket.on('error', reject);
        socket.on('close', () => reject(new Error(`closed after ${JSON.stringify(messages)}`)));
      });
    const results = (messages: ReplServerMessage[]) => messages.flatMap((m) => (m.type === 'result' ? [m.result] : []));

    const created = await execOnOpen('/v1/machine/new/repl', ['x = 21', 'x * 2']);
    assert.equal(created[0]!.type, 'connected');
    const name = (created[0] as { machine_name: string }).machine_name;
    const received = created.filter((m) => m.type === 'exec_received');
    assert.deepEqual(received, [
      { type: 'exec_received', seq: 0, request_id: 0 },
      { type: 'exec_received', seq: 1, request_id: 1 },
    ]);
    assert.deepEqual(
      results(created).map((r) => ('value' in r ? r.value : r.error)),
      [null, '42'],
    );

    // Closed between two instructions, swapped out, then reconnected by name with an exec on open.
    assert.equal((await api('POST', `/v1/machine/${name}/swap`)).status, 200);
    const resumed = await execOnOpen(`/v1/machine/${name}/repl`, ['x + 1']);
    assert.equal(resumed[0]!.type, 'connected');
    assert.deepEqual(
      results(resumed).map((r) => ('value' in r ? r.value : r.error)),
      ['22'],
    );
  });

  it('keeps a silent result stream open with blank lines, only for a client that asks', async () => {
    const { json } = await api('POST', '/v1/machine/new', {});
    const name = json.machine_name as string;
    const { json: exec } = await api('POST', `/v1/machine/${name}/exec`, {
      instruction: { code: 'import time\ntime.sleep(2.5)\n"done"', timeout_seconds: 30 },
    });
    const stream = async (headers: Record<string, string>) => {
      const response = await fetch(`${server.url}/v1/machine/${name}/exec/${exec.instruction_seq as number}/stream-result`, {
        headers: { ...auth, ...headers },
      });
      return (await response.text()).split('\n');
    };
    const [asked, plain] = await Promise.all([stream({ [KEEPALIVE_HEADER]: '1' }), stream({})]);
    assert.ok(
      asked.slice(0, -2).some((line) => line === ''),
      'a blank line while the code was silent',
    );
    assert.equal(JSON.parse(asked.at(-2)!).result.value, "'done'");
    assert.deepEqual(
      plain.slice(0, -1).filter((line) => line === ''),
      [],
      'plain NDJSON for others',
    );
  });

  it('gives a client every output line once when its result stream breaks and is opened again', async () => {
    const target = new URL(server.url);
    let cut = false;
    // Cuts the first result stream after its first line, as a proxy with an idle timeout would.
    const proxy = createServer((req, res) => {
      const upstream = request(new URL(req.url!, target), { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        if (cut || !req.url!.endsWith('/stream-result')) return void answer.pipe(res);
        cut = true;
        answer.once('data', (first: Buffer) => {
          res.write(first.subarray(0, first.indexOf('\n') + 1), () => {
            res.destroy();
            answer.destroy();
          });
        });
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const client = new ForeverVMClient({ baseUrl: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, token: server.token });
      const name = await client.createMachine();
      const { instruction_seq: seq } = await client.exec(
        name,
        'import time\nfor i in range(3):\n    print(f"line {i}", flush=True)\n    time.sleep(0.3)\n"end"',
      );
      const lines: string[] = [];
      const result = await client.streamResult(name, seq, (chunk) => lines.push(chunk.data));
      assert.ok(cut, 'the stream was cut');
      assert.deepEqual(lines, ['line 0', 'line 1', 'line 2']);
      assert.equal((result as { value: string }).value, "'end'");
    } finally {
      proxy.close();
    }
  });

  it('refuses WebSocket upgrades without the token or from a foreign Origin', async () => {
    const wsUrl = server.url.replace('http', 'ws');
    const status = (headers: Record<string, string>) =>
      new Promise<number>((resolve) => {
        const socket = new WebSocket(wsUrl + '/v1/machine/new/repl', { headers });
        socket.on('unexpected-response', (_req, res) => resolve(res.statusCode!));
        socket.on('open', () => resolve(101));
        socket.on('error', () => {});
      });
    assert.equal(await status({}), 401);
    assert.equal(await status({ ...auth, origin: 'https://evil.example' }), 403);
  });

  it('lists and shows variables, and keeps the history', async () => {
    const name = (await api('POST', '/v1/machine/new', {})).json.machine_name as string;
    await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'numbers = list(range(5))\nlabel = "five"' } });
    await api('GET', `/v1/machine/${name}/exec/0/result`);
    const variables = (await api('GET', `/v1/machine/${name}/variables`)).json.variables as Array<{ name: string; type: string }>;
    assert.deepEqual(
      variables.map((v) => [v.name, v.type]),
      [
        ['numbers', 'list'],
        ['label', 'str'],
      ],
    );
    assert.equal((await api('GET', `/v1/machine/${name}/variables/numbers`)).json.repr, '[0, 1, 2, 3, 4]');
    assert.equal((await api('GET', `/v1/machine/${name}/variables/missing`)).status, 400);
    const history = (await api('GET', `/v1/machine/${name}/history?last=1`)).json.history as Array<{ seq: number; code: string }>;
    assert.deepEqual(
      history.map((h) => [h.seq, h.code]),
      [[0, 'numbers = list(range(5))\nlabel = "five"']],
    );
  });

  for (const engine of ['python', 'sandbox'] as const) {
    it(`writes, lists and reads files inside a ${engine} machine, kept across a swap`, async () => {
      const name = (await api('POST', '/v1/machine/new', { engine })).json.machine_name as string;
      const written = await api('PUT', `/v1/machine/${name}/files/content`, { path: 'notes/todo.txt', content: 'water the plants\n' });
      assert.equal(written.status, 200, JSON.stringify(written.json));
      assert.equal(written.json.size, 17);
      await api('PUT', `/v1/machine/${name}/files/content`, { path: 'blob.bin', content: Buffer.from([0, 255, 1]).toString('base64'), encoding: 'base64' });
      await api('POST', `/v1/machine/${name}/swap`);
      const listing = (await api('GET', `/v1/machine/${name}/files`)).json as { entries: Array<{ name: string; type: string }> };
      assert.deepEqual(
        listing.entries.filter((e) => ['notes', 'blob.bin'].includes(e.name)).map((e) => [e.name, e.type]),
        [
          ['notes', 'dir'],
          ['blob.bin', 'file'],
        ],
      );
      const read = (await api('GET', `/v1/machine/${name}/files/content?path=notes/todo.txt`)).json as { content: string };
      assert.equal(Buffer.from(read.content, 'base64').toString(), 'water the plants\n');
      assert.deepEqual(
        [...Buffer.from(((await api('GET', `/v1/machine/${name}/files/content?path=blob.bin`)).json as { content: string }).content, 'base64')],
        [0, 255, 1],
      );
      await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'open("notes/todo.txt").read().strip()' } });
      assert.equal(((await api('GET', `/v1/machine/${name}/exec/0/result`)).json.result as { value: string }).value, "'water the plants'");
      assert.equal((await api('GET', `/v1/machine/${name}/files/content?path=nope.txt`)).status, 400);
    });
  }

  it('streams events: machines created, state changes, finished instructions', async () => {
    const controller = new AbortController();
    const response = await fetch(server.url + '/v1/events', { headers: auth, signal: controller.signal });
    assert.equal(response.headers.get('content-type'), 'text/event-stream');
    const events: Array<{ type: string; name?: string; seq?: number; error?: boolean; machine?: { name: string } }> = [];
    const reading = (async () => {
      const decoder = new TextDecoder();
      let buffered = '';
      for await (const chunk of response.body!) {
        buffered += decoder.decode(chunk as Uint8Array, { stream: true });
        for (const block of buffered.split('\n\n').slice(0, -1)) {
          const data = block.split('\n').find((l) => l.startsWith('data: '));
          if (data) events.push(JSON.parse(data.slice(6)));
        }
        buffered = buffered.slice(buffered.lastIndexOf('\n\n') + 2);
      }
    })().catch(() => {});
    const name = (await api('POST', '/v1/machine/new', {})).json.machine_name as string;
    await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: '1/0' } });
    await eventually(() => events.some((e) => e.type === 'instruction' && e.name === name), 20_000, 'the instruction event');
    assert.ok(events.some((e) => e.type === 'created' && e.machine?.name === name));
    assert.ok(events.some((e) => e.type === 'state' && e.name === name));
    assert.deepEqual(
      events.find((e) => e.type === 'instruction' && e.name === name),
      { type: 'instruction', name, seq: 0, error: true },
    );
    controller.abort();
    await reading;
  });

  it("offers Perennial's extensions: details, swap, interrupt, delete and status", async () => {
    const name = (await api('POST', '/v1/machine/new', { engine: 'python' })).json.machine_name as string;
    await api('POST', `/v1/machine/${name}/exec`, { instruction: { code: 'v = 1' } });
    await api('GET', `/v1/machine/${name}/exec/0/result`);
    const details = (await api('GET', `/v1/machine/${name}`)).json;
    assert.equal(details.engine, 'python');
    assert.equal(details.nextSeq, 1);
    const swapped = (await api('POST', `/v1/machine/${name}/swap`)).json;
    assert.equal(swapped.state, 'swapped');
    assert.deepEqual((await api('POST', `/v1/machine/${name}/interrupt`)).json, { cancelled: 0, interrupted: false });
    const status = (await api('GET', '/v1/status')).json;
    assert.equal(status.defaultEngine, 'python');
    assert.equal((status.machines as { total: number }).total >= 1, true);
    assert.deepEqual((status.engines as Array<{ name: string }>).map((e) => e.name).sort(), ['python', 'sandbox']);
    assert.deepEqual((await api('DELETE', `/v1/machine/${name}`)).json, { deleted: true });
    assert.equal((await api('GET', `/v1/machine/${name}`)).status, 404);
  });
});
