/**
 * The footprint table of issue 11, in one run: the idle local server's memory (the built CLI, as
 * VS Code starts it), a warm trivial sandbox machine's, MCP over Streamable HTTP against the
 * WebSocket REPL, sandboxed Python against plain Pyodide in this process, and a data dir of
 * 10,000 machines (create throughput, bytes per machine, server start, full list over HTTP).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client, StreamableHTTPClientTransport, type VersionNegotiationMode } from '@modelcontextprotocol/client';
import { WebSocket } from 'ws';
import { serverEnv } from '../src/client/local-server-connection.ts';
import { MachineManager } from '../src/machines/machine-manager.ts';
import type { ServerInfo } from '../src/platform/server-info.ts';
import { LocalServer } from '../src/server/local-server.ts';
import type { ExecResult, MachineInfo, ReplServerMessage } from '../src/shared/types.ts';
import { SPEED } from './sandbox-engine.ts';
import { childPids, median, ms, row, timeIt, treeMemory } from './stats.ts';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const MIB = 1024 * 1024;
const MACHINES = 10_000;
const ROUND_TRIPS = 500;
const SPEED_RUNS = 11;
const SAMPLES = 5;
/** Longer than the image codec's thread stays idle (image-codec.ts). */
const CODEC_QUIET_MS = 3000;

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB (${(bytes / MIB).toFixed(0)} MiB)`;
const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

/** `perennial serve` on a data dir, as a client would start it; resolves once it answers. */
async function serve(dataDir: string, ...args: string[]): Promise<{ child: ChildProcess; info: ServerInfo; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, 'serve', ...args], {
    stdio: 'ignore',
    env: serverEnv({ ...process.env, PERENNIAL_PYTHON: PYTHON }),
  });
  const path = join(dataDir, 'server.json');
  while (!existsSync(path)) await sleep(20);
  const info = JSON.parse(await readFile(path, 'utf8')) as ServerInfo;
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return { child, info, stop };
}

async function api<T>(info: ServerInfo, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(info.url + path, {
    method,
    headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await response.json()) as T;
}

async function p50(task: () => Promise<unknown>): Promise<number> {
  // Long enough for both ends to be optimised: the first few hundred calls run slower.
  for (let i = 0; i < 300; i++) await task();
  const times: number[] = [];
  for (let i = 0; i < ROUND_TRIPS; i++) {
    const t = performance.now();
    await task();
    times.push(performance.now() - t);
  }
  return median(times);
}

async function memoryFigures(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-footprint-'));
  // The pool emptied a second after the machine is made: what remains is the server and the machine.
  const server = await serve(dataDir, '--pool-idle-seconds', '1');
  try {
    await sleep(15_000);
    const idle = treeMemory(server.child.pid!);
    row('idle local server, no machine, 15 s after start', mb(idle), 'target ≤ 80 MB');
    const { machine_name: name } = await api<{ machine_name: string }>(server.info, 'POST', '/v1/machine/new', { engine: 'sandbox' });
    await api(server.info, 'POST', `/v1/machine/${name}/exec`, { instruction: { code: '1+1' } });
    await api(server.info, 'GET', `/v1/machine/${name}/exec/0/result`);
    // Past the pool's second of idleness and the zstd thread's twenty: what stays while the machine is warm.
    await sleep(25_000);
    const status = await api<{ engines: Array<{ name: string; ready: number }> }>(server.info, 'GET', '/v1/status');
    if (status.engines.find((e) => e.name === 'sandbox')!.ready) throw new Error('the pool did not empty');
    const total = treeMemory(server.child.pid!);
    const serverAlone = treeMemory(server.child.pid!, 'rss', false);
    row('one warm trivial sandbox machine, added to that (RSS)', mb(total - idle), 'target ≤ 110 MB');
    row('  of which its sandbox process (RSS)', mb(total - serverAlone));
    row('  of which its sandbox process (private memory)', mb(treeMemory(server.child.pid!, 'private') - treeMemory(server.child.pid!, 'private', false)));
    row('  of which the server (first sandbox use: base image built)', mb(serverAlone - idle));
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * The whole process tree as a person sees it (issue 25): a server on a fresh data dir with its
 * defaults (the pool stays filled), one warm trivial sandbox machine, 15 s after its first result.
 */
async function wholeTree(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-whole-tree-'));
  const server = await serve(dataDir);
  try {
    await sleep(15_000);
    const idle = treeMemory(server.child.pid!);
    const { machine_name: name } = await api<{ machine_name: string }>(server.info, 'POST', '/v1/machine/new', { engine: 'sandbox' });
    await api(server.info, 'POST', `/v1/machine/${name}/exec`, { instruction: { code: '1+1' } });
    await api(server.info, 'GET', `/v1/machine/${name}/exec/0/result`);
    await sleep(15_000);
    const sandboxes = childPids(server.child.pid!).length;
    row('whole tree, idle server, no machine, 15 s after start (RSS)', mb(idle), 'target ≤ 80 MB');
    row(`whole tree, one warm sandbox machine, ${sandboxes} sandboxes (RSS)`, mb(treeMemory(server.child.pid!)), 'target ≤ 260 MB');
    row('  the same, shared pages divided among processes (PSS)', mb(treeMemory(server.child.pid!, 'pss')));
    row('  of which the server alone (RSS)', mb(treeMemory(server.child.pid!, 'rss', false)));
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The first two sandbox machines of a server (no pool yet), and the next once the pool has filled. */
async function firstUse(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-first-use-'));
  // The base image is built once per version and data dir; a server's first use finds it there.
  const builder = await serve(dataDir);
  await createAndRun(builder.info);
  await builder.stop();
  const server = await serve(dataDir);
  try {
    const first = await timeIt(() => createAndRun(server.info));
    // The pool fills from the second machine made within its idle time: that one is made cold too.
    const second = await timeIt(() => createAndRun(server.info));
    // A process counts as ready once warmed up on the base: a create during its boot would
    // measure the competition for CPU on two cores, not the pool.
    const poolFilled = async () => {
      while (
        (await api<{ engines: Array<{ name: string; ready: number }> }>(server.info, 'GET', '/v1/status')).engines.find((e) => e.name === 'sandbox')!.ready < 1
      )
        await sleep(50);
    };
    const creates: number[] = [];
    // A trivial machine swapped out, then its next instruction (the swap-in and the result): at
    // once, and after a quiet time long enough for the image codec's thread to have ended, as
    // before most swap-ins, which follow minutes of quiet.
    const swapIns = { atOnce: [] as number[], afterQuiet: [] as number[] };
    for (let i = 0; i < SAMPLES; i++) {
      await poolFilled();
      creates.push(await timeIt(() => createAndRun(server.info)));
      for (const when of ['atOnce', 'afterQuiet'] as const) {
        const name = await createAndRun(server.info);
        await poolFilled();
        await api(server.info, 'POST', `/v1/machine/${name}/swap`);
        if (when === 'afterQuiet') await sleep(CODEC_QUIET_MS);
        swapIns[when].push(await timeIt(() => runAndWait(server.info, name, 1, 'x = 1')));
      }
    }
    row('first sandbox machine of a server: create + first result', ms(first));
    row('  the second, which fills the pool: create + first result', ms(second));
    row(`  the next ones, from the pool (median of ${SAMPLES})`, ms(median(creates)), 'target ≤ 50 ms');
    row(`  a trivial machine's swap-in + result, at once (median of ${SAMPLES})`, ms(median(swapIns.atOnce)), 'target ≤ 60 ms');
    row(`  the same after ${CODEC_QUIET_MS / 1000} s of quiet: the codec's thread has ended`, ms(median(swapIns.afterQuiet)), 'target ≤ 60 ms');
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** A new sandbox machine and its first result; answers its name. */
async function createAndRun(info: ServerInfo): Promise<string> {
  const { machine_name: name } = await api<{ machine_name: string }>(info, 'POST', '/v1/machine/new', { engine: 'sandbox' });
  await runAndWait(info, name, 0, '1+1');
  return name;
}

/** Instruction `seq` of a machine, sent and waited for. */
async function runAndWait(info: ServerInfo, name: string, seq: number, code: string): Promise<void> {
  await api(info, 'POST', `/v1/machine/${name}/exec`, { instruction: { code } });
  await api(info, 'GET', `/v1/machine/${name}/exec/${seq}/result`);
}

async function mcpOverhead(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-mcp-'));
  const server = await serve(dataDir, '--engine', 'python');
  try {
    const { info } = server;
    const { machine_name: name } = await api<{ machine_name: string }>(info, 'POST', '/v1/machine/new', {});
    const socket = new WebSocket(`${info.url.replace('http', 'ws')}/v1/machine/${name}/repl`, { headers: { authorization: `Bearer ${info.token}` } });
    const waiting: Array<() => void> = [];
    socket.on('message', (data) => {
      const message = JSON.parse(data.toString()) as ReplServerMessage;
      if (message.type === 'result' || message.type === 'connected') waiting.shift()?.();
    });
    await new Promise<void>((resolve) => waiting.push(resolve));
    let id = 0;
    const ws = await p50(
      () =>
        new Promise<void>((resolve) => (waiting.push(resolve), socket.send(JSON.stringify({ type: 'exec', instruction: { code: '1+1' }, request_id: id++ })))),
    );
    socket.close();
    row('WebSocket REPL, 1+1, python machine, p50', ms(ws));
    const args = { name: 'run-python-in-repl', arguments: { replId: name, pythonCode: '1+1' } };
    // What the server adds, with a client that costs next to nothing (one keep-alive socket)...
    const raw = await rawMcpClient(info);
    const rows: Array<[string, number]> = [
      ['raw HTTP client, 2025-11-25 session', await p50(() => raw.session('tools/call', args))],
      ['raw HTTP client, 2026-07-28', await p50(() => raw.modern('tools/call', args))],
    ];
    raw.close();
    // ...and with the SDK's client, whose own share (fetch, SSE parsing, validation) is most of it.
    const eras: Array<[string, VersionNegotiationMode]> = [
      ['SDK client, 2025-11-25 session', 'legacy'],
      ['SDK client, 2026-07-28', { pin: '2026-07-28' }],
    ];
    for (const [label, mode] of eras) {
      const client = new Client({ name: 'bench', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${info.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${info.token}` } } }),
      );
      rows.push([label, await p50(() => client.callTool(args))]);
      await client.close();
    }
    for (const [label, time] of rows) row(`MCP run-python-in-repl, ${label}, p50`, ms(time), `+${ms(time - ws)} over the WebSocket REPL`);
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/**
 * Streamable HTTP with one keep-alive socket and no parsing beyond the answer's text: the time the
 * server takes, for both eras (a 2025 session after `initialize`; 2026-07-28 requests carrying
 * their own version in `_meta` and the headers that spec asks for).
 */
async function rawMcpClient(info: ServerInfo) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let id = 0;
  const post = (body: object, headers: Record<string, string>) =>
    new Promise<{ sessionId?: string; text: string }>((resolve, reject) => {
      const data = JSON.stringify({ jsonrpc: '2.0', ...body });
      const headed = { authorization: `Bearer ${info.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers };
      const sent = request(`${info.url}/mcp`, { method: 'POST', agent, headers: headed }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          res.statusCode === 200 || res.statusCode === 202
            ? resolve({ sessionId: res.headers['mcp-session-id'] as string | undefined, text })
            : reject(new Error(`${res.statusCode}: ${text}`)),
        );
      });
      sent.on('error', reject).end(data);
    });
  const opened = await post(
    { id: id++, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } },
    {},
  );
  const session = { 'mcp-session-id': opened.sessionId!, 'mcp-protocol-version': '2025-11-25' };
  await post({ method: 'notifications/initialized' }, session);
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const checked = (answer: { text: string }) => {
    if (!answer.text.includes('"result"')) throw new Error(`no result: ${answer.text.slice(0, 200)}`);
  };
  return {
    session: async (method: string, params: { name: string }) => checked(await post({ id: id++, method, params }, session)),
    modern: async (method: string, params: { name: string }) =>
      checked(
        await post(
          { id: id++, method, params: { ...params, _meta: meta } },
          { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': params.name },
        ),
      ),
    close: () => agent.destroy(),
  };
}

/** Pure Python in a sandbox machine (the kernel's runtime_ms) against Pyodide loaded in this process. */
async function sandboxSpeed(): Promise<void> {
  const pyodideDir = dirname(createRequire(import.meta.url).resolve('pyodide/package.json'));
  const { loadPyodide } = (await import(pathToFileURL(join(pyodideDir, 'pyodide.mjs')).href)) as {
    loadPyodide: () => Promise<{ runPython(code: string): unknown }>;
  };
  const plain = await loadPyodide();
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-speed-'));
  const manager = await MachineManager.open({ dataDir, saveDelayMs: 600_000 });
  try {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    // One machine: no pool process boots beside it to share the two cores (it fills from the second).
    await manager.run(name, '1', {});
    for (const [label, code] of Object.entries(SPEED)) {
      const inSandbox: number[] = [];
      const inPlain: number[] = [];
      // Alternating, after two rounds that let both tier up; single runs scatter widely here.
      for (let i = 0; i < SPEED_RUNS + 2; i++) {
        const { result } = await manager.run(name, code, { timeoutSeconds: 120 });
        const t = performance.now();
        plain.runPython(code);
        if (i < 2) continue;
        inPlain.push(performance.now() - t);
        inSandbox.push((result as ExecResult).runtime_ms);
      }
      row(
        `${label}: sandbox / plain Pyodide (median of ${SPEED_RUNS})`,
        `${median(inSandbox).toFixed(0)} / ${median(inPlain).toFixed(0)} ms`,
        `${(median(inSandbox) / median(inPlain)).toFixed(2)}×`,
        'target ≤ 1.15×',
      );
    }
  } finally {
    await manager.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function manyMachines(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-10k-'));
  try {
    const manager = await MachineManager.open({ dataDir });
    const started = performance.now();
    for (let i = 0; i < MACHINES; i++) await manager.create({ engine: 'python', tags: { group: String(i % 10) } });
    const seconds = (performance.now() - started) / 1000;
    await manager.close();
    const bytes = Number(
      execFileSync('du', ['-sb', join(dataDir, 'machines')])
        .toString()
        .split('\t')[0],
    );
    const blocks =
      Number(
        execFileSync('du', ['-sk', join(dataDir, 'machines')])
          .toString()
          .split('\t')[0],
      ) * 1024;
    row(`create ${MACHINES} machines`, `${(MACHINES / seconds).toFixed(0)}/s`);
    row('data dir per machine (bytes / on disk)', `${(bytes / MACHINES).toFixed(0)} B / ${(blocks / MACHINES / 1024).toFixed(1)} KiB`);
    const starts: number[] = [];
    const lists: number[] = [];
    for (let round = 0; round < 3; round++) {
      const t = performance.now();
      const server = await LocalServer.start({ dataDir });
      starts.push(performance.now() - t);
      const info = { url: server.url, token: server.token } as ServerInfo;
      for (let i = 0; i < 3; i++) {
        const l = performance.now();
        const { machines } = await api<{ machines: MachineInfo[] }>(info, 'POST', '/v1/machine/list', {});
        if (machines.length !== MACHINES) throw new Error(`listed ${machines.length} machines`);
        lists.push(performance.now() - l);
      }
      await server.close();
    }
    row(`${MACHINES} machines: server start (median of 3)`, ms(median(starts)), 'target ≤ 1 s');
    row(`${MACHINES} machines: full list over HTTP (median of 9)`, ms(median(lists)), 'target ≤ 100 ms');
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

export async function benchFootprint(): Promise<void> {
  console.log('\nfootprint (issues 11 and 25)');
  await wholeTree();
  await memoryFigures();
  await firstUse();
  await mcpOverhead();
  await sandboxSpeed();
  await manyMachines();
}
