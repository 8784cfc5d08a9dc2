/**
 * Server figures: the `1+1` round trip through HTTP exec+result, the WebSocket REPL, and MCP
 * `run-python-in-repl` over stdio and Streamable HTTP, next to the in-process MachineManager (the
 * floor); then a load run of 50 clients × 20 instructions over 10 machines of both engines.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport, type Transport, type VersionNegotiationMode } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { WebSocket } from 'ws';
import { ForeverVMClient } from '../src/client/forevervm-client.ts';
import { LocalServer } from '../src/server/local-server.ts';
import type { ReplServerMessage } from '../src/shared/types.ts';
import { median, ms, percentile, row } from './stats.ts';

const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const ROUND_TRIPS = 1000;
const WARM_UP = 100;
const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

async function sample(task: () => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < ROUND_TRIPS + WARM_UP; i++) {
    const t = performance.now();
    await task();
    if (i >= WARM_UP) times.push(performance.now() - t);
  }
  return times;
}

async function mcpClient(transport: Transport, mode: VersionNegotiationMode = 'legacy'): Promise<Client> {
  const client = new Client({ name: 'bench', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  return client;
}

export async function benchServer(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-server-'));
  process.env.PERENNIAL_PYTHON = PYTHON;
  const server = await LocalServer.start({ dataDir, defaultEngine: 'python', saveDelayMs: 600_000 });
  try {
    console.log('\nlocal server (python engine machines)');
    const client = new ForeverVMClient({ baseUrl: server.url, token: server.token });
    const name = await client.createMachine();
    const floor = await sample(() => server.manager.run(name, '1+1'));
    const http = await sample(async () => client.result(name, (await client.exec(name, '1+1')).instruction_seq));

    const ws = await replRoundTrips(server, name);

    const args = { name: 'run-python-in-repl', arguments: { replId: name, pythonCode: '1+1' } };
    const mcpSession = await mcpHttpRoundTrips(server, name, 'legacy');
    const mcpModern = await mcpHttpRoundTrips(server, name, { pin: '2026-07-28' });
    const mcpPlain = await mcpPlainHttpRoundTrips(server, name);
    const overStdio = await mcpClient(new StdioClientTransport({ command: process.execPath, args: [CLI, '--data-dir', dataDir, 'mcp'], stderr: 'ignore' }));
    const mcpStdio = await sample(() => overStdio.callTool(args));
    await overStdio.close();

    row('', 'p50', 'p95', 'over floor');
    const line = (label: string, times: number[]) => row(label, ms(median(times)), ms(percentile(times, 95)), ms(median(times) - median(floor)));
    line('floor: in-process MachineManager', floor);
    line('HTTP exec + result', http);
    line('WebSocket REPL', ws);
    line('MCP run-python-in-repl, HTTP 2025-11-25 (session)', mcpSession);
    line('MCP run-python-in-repl, HTTP 2026-07-28', mcpModern);
    line('MCP run-python-in-repl, HTTP 2025-11-25, plain HTTP client', mcpPlain);
    line('MCP run-python-in-repl, stdio', mcpStdio);

    await load(client);
  } finally {
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** `1+1` on machine `name` over the WebSocket REPL, as the ForeverVM SDK sends it: each round trip's time. */
export async function replRoundTrips(server: LocalServer, name: string): Promise<number[]> {
  const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/machine/${name}/repl`, { headers: { authorization: `Bearer ${server.token}` } });
  const waiting: Array<(m: ReplServerMessage) => void> = [];
  socket.on('message', (data) => {
    const message = JSON.parse(data.toString()) as ReplServerMessage;
    if (message.type === 'result' || message.type === 'connected') waiting.shift()?.(message);
  });
  await new Promise<ReplServerMessage>((resolve) => waiting.push(resolve));
  let requestId = 0;
  try {
    return await sample(
      () =>
        new Promise<ReplServerMessage>((resolve) => {
          waiting.push(resolve);
          socket.send(JSON.stringify({ type: 'exec', instruction: { code: '1+1' }, request_id: requestId++ }));
        }),
    );
  } finally {
    socket.close();
  }
}

/** `1+1` on machine `name` as MCP `run-python-in-repl` over Streamable HTTP, in the protocol era `mode` picks: each call's time. */
export async function mcpHttpRoundTrips(server: LocalServer, name: string, mode: VersionNegotiationMode): Promise<number[]> {
  const overHttp = await mcpClient(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } }),
    mode,
  );
  try {
    return await sample(() => overHttp.callTool({ name: 'run-python-in-repl', arguments: { replId: name, pythonCode: '1+1' } }));
  } finally {
    await overHttp.close();
  }
}

/**
 * `1+1` on machine `name` as MCP `run-python-in-repl` on a 2025-11-25 session over Streamable HTTP,
 * sent by a plain HTTP client (one kept-alive connection, the JSON-RPC written and the SSE answer
 * read as text): the server's part of a call, without the SDK client's own work.
 */
export async function mcpPlainHttpRoundTrips(server: LocalServer, name: string): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const headers: Record<string, string> = {
    authorization: `Bearer ${server.token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const post = (body: unknown) =>
    new Promise<{ session?: string; text: string }>((resolve, reject) => {
      const request = http.request(`${server.url}/mcp`, { method: 'POST', agent, headers }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ session: response.headers['mcp-session-id'] as string | undefined, text }));
      });
      request.on('error', reject);
      request.end(JSON.stringify(body));
    });
  try {
    const clientInfo = { name: 'bench', version: '1.0.0' };
    const { session } = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo } });
    Object.assign(headers, { 'mcp-session-id': session!, 'mcp-protocol-version': '2025-11-25' });
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    let id = 1;
    return await sample(async () => {
      const { text } = await post({
        jsonrpc: '2.0',
        id: id++,
        method: 'tools/call',
        params: { name: 'run-python-in-repl', arguments: { replId: name, pythonCode: '1+1' } },
      });
      if (!text.includes('"value":"2"')) throw new Error(`unexpected answer: ${text.slice(0, 300)}`);
    });
  } finally {
    agent.destroy();
  }
}

/** 50 clients, 20 instructions each, over 10 machines (5 per engine); every result is checked. */
async function load(client: ForeverVMClient): Promise<void> {
  const machines: string[] = [];
  for (let i = 0; i < 10; i++) machines.push(await client.createMachine({ engine: i % 2 ? 'sandbox' : 'python' }));
  for (const machine of machines) await client.result(machine, (await client.exec(machine, 'ready = True')).instruction_seq);
  const latencies: number[] = [];
  let wrong = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 50 }, async (_, id) => {
      const machine = machines[id % machines.length]!;
      for (let n = 1; n <= 20; n++) {
        const t = performance.now();
        const { instruction_seq: seq } = await client.exec(machine, `c${id} = globals().get("c${id}", 0) + 1\nc${id}`);
        const result = await client.result(machine, seq);
        latencies.push(performance.now() - t);
        // In order per client: its counter reads 1, 2, ... 20.
        if (!('value' in result) || result.value !== String(n)) wrong++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  console.log(`\nload: 50 clients × 20 instructions over 10 machines (5 python, 5 sandbox), HTTP exec + result`);
  row('', 'figure');
  row('instructions per second', `${(1000 / seconds).toFixed(0)}/s`);
  row('latency p50', ms(median(latencies)));
  row('latency p99', ms(percentile(latencies, 99)));
  row('wrong or out-of-order results', String(wrong));
  if (wrong) process.exitCode = 1;
}
