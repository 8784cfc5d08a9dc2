import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { basename } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport, type CallToolResult, type VersionNegotiationMode } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { RunOutput } from '../../src/mcp/tools/index.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { startNode, type ClusterEngines } from '../helpers/cluster-nodes.ts';
import { startBucket, startPostgres } from '../helpers/cluster-services.ts';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const MAKE_WHEEL = fileURLToPath(new URL('../fixtures/make_wheel.py', import.meta.url));

/** What MCP clients built on the SDKs give a call before they give up and cancel it. */
const CLIENT_LIMIT_MS = 60_000;

/** 75 s of work that prints a line a second: longer than a client waits for one call. */
const LONG_RUN = 'import time\nfor second in range(75):\n    print(f"second {second}", flush=True)\n    time.sleep(1)\n"ran 75 s"';
const LONG_RUN_LINES = Array.from({ length: 75 }, (_, second) => `second ${second}`);

/** A loop that says it has begun, then runs until it is interrupted. */
const ENDLESS = 'print("looping", flush=True)\nwhile True:\n    pass';

/** An agent's MCP connection, whichever SDK line it is built on: a tool call with the client's limit, and an optional cancel. */
interface Agent {
  call(
    name: string,
    args: Record<string, unknown>,
    options?: { signal?: AbortSignal; timeoutMs?: number; onProgress?: (message: string) => void },
  ): Promise<CallToolResult>;
  close(): Promise<void>;
}

/** An agent on the official SDK's v1 line (`@modelcontextprotocol/sdk`), which declares no tasks. */
async function agentV1(transport: StdioV1 | HttpV1): Promise<Agent> {
  const client = new ClientV1({ name: 'sdk-v1-agent', version: '1.0.0' });
  await client.connect(transport);
  return {
    call: async (name, args, { signal, timeoutMs = CLIENT_LIMIT_MS, onProgress } = {}) =>
      (await client.callTool({ name, arguments: args }, undefined, {
        signal,
        timeout: timeoutMs,
        ...(onProgress ? { onprogress: (p: { message?: string }) => onProgress(p.message ?? '') } : {}),
      })) as CallToolResult,
    close: () => client.close(),
  };
}

/** An agent on our v2 line, without the Tasks extension, in the protocol era `mode` negotiates. */
async function agentV2(transport: StdioClientTransport | StreamableHTTPClientTransport, mode: VersionNegotiationMode): Promise<Agent> {
  const client = new Client({ name: 'sdk-v2-agent', version: '1.0.0' }, { versionNegotiation: { mode } });
  await client.connect(transport);
  return {
    call: async (name, args, { signal, timeoutMs = CLIENT_LIMIT_MS, onProgress } = {}) =>
      (await client.callTool(
        { name, arguments: args },
        { signal, timeout: timeoutMs, ...(onProgress ? { onprogress: (p: { message?: string }) => onProgress(p.message ?? '') } : {}) },
      )) as CallToolResult,
    close: () => client.close(),
  };
}

const stdioArgs = (dataDir: string) => ({
  command: process.execPath,
  args: [CLI, '--data-dir', dataDir, 'mcp'],
  env: { ...process.env } as Record<string, string>,
});
const bearer = (token: string) => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });

/** Where an agent connects, and the REPL it works in (made on the machine's own server, or node). */
interface Route {
  label: string;
  /** A 2026-07-28 connection over HTTP, where a call the client stops waiting for is closed, which is also how it cancels. */
  closesToCancel?: boolean;
  connect(): Promise<Agent>;
  newRepl(): Promise<string>;
}

const structured = (result: CallToolResult) => result.structuredContent as RunOutput;

/**
 * Long runs for MCP clients that take no tasks, through the official SDK's v1 line and our v2
 * line, over `perennial mcp` on stdio, the server's `/mcp`, and a cluster node other than the
 * machine's: a run answers before the client gives up, the code runs on, and the agent comes back
 * for its result with wait-for-repl-instruction.
 */
describe('long runs for MCP clients without tasks', { timeout: 400_000 }, () => {
  let server: LocalServer;
  let data: { dir: string; cleanup(): Promise<void> };
  let engines: ClusterEngines;
  const nodes: Array<Awaited<ReturnType<typeof startNode>>> = [];
  let routes: Route[];

  before(async () => {
    data = await tempDataDir();
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
    const postgres = await startPostgres();
    const bucket = await startBucket();
    engines = { postgres, bucket, database: await postgres.database('long-runs') };
    const [a, b] = await Promise.all([startNode(engines), startNode(engines)]);
    nodes.push(a, b);
    const local = async () => (await server.manager.create({ engine: 'python', python: TEST_PYTHON })).name;
    routes = [
      { label: 'SDK v1, perennial mcp over stdio', connect: () => agentV1(new StdioV1({ ...stdioArgs(data.dir), stderr: 'pipe' })), newRepl: local },
      { label: 'SDK v1, /mcp over HTTP', connect: () => agentV1(new HttpV1(new URL(`${server.url}/mcp`), bearer(server.token))), newRepl: local },
      {
        label: 'SDK v2, perennial mcp over stdio, 2026-07-28',
        connect: () => agentV2(new StdioClientTransport({ ...stdioArgs(data.dir), stderr: 'pipe' }), { pin: '2026-07-28' }),
        newRepl: local,
      },
      {
        label: 'SDK v2, /mcp over HTTP, 2025-11-25',
        connect: () => agentV2(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), bearer(server.token)), 'legacy'),
        newRepl: local,
      },
      {
        label: "SDK v2, a cluster node's /mcp, 2026-07-28, for a machine another node runs",
        closesToCancel: true,
        connect: () => agentV2(new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), bearer(b.token)), 'auto'),
        newRepl: async () => (await a.client().create()).name,
      },
    ];
  });

  after(async () => {
    await server?.close();
    delete process.env.PERENNIAL_PYTHON;
    await data?.cleanup();
    await Promise.all(nodes.map((n) => n.cleanup()));
    await engines?.bucket.stop();
    await engines?.postgres.stop();
  });

  it('a 75 s run with no time limit is answered as still running before the client gives up, runs on, and is come back to', async () => {
    await Promise.all(
      routes.map(async ({ label, connect, newRepl }) => {
        const replId = await newRepl();
        const agent = await connect();
        try {
          // The client's 60 s limit would reject this call had it not been answered in time.
          const first = structured(await agent.call('run-python-in-repl', { replId, pythonCode: LONG_RUN }));
          assert.equal(first.running, true, `${label}: answered while it runs`);
          assert.match(first.notes.join('\n'), new RegExp(`Instruction ${first.seq} of REPL ${replId} has not finished.*wait-for-repl-instruction`), label);
          let output = first.stdout.split('\n');
          let last = first;
          while (last.running) {
            last = structured(await agent.call('wait-for-repl-instruction', { replId, seq: first.seq, from: last.next }));
            if (last.running) output = [...output, ...last.stdout.split('\n').filter(Boolean)];
          }
          assert.equal(last.value, "'ran 75 s'", label);
          assert.equal(last.error, null, label);
          assert.deepEqual(last.stdout.split('\n'), LONG_RUN_LINES, `${label}: the whole output with the result`);
          assert.deepEqual(output, LONG_RUN_LINES.slice(0, output.length), `${label}: the output while it ran, in order, each line once`);
          // A call for the REPL's newest instruction, with no number, gives the same.
          const again = structured(await agent.call('wait-for-repl-instruction', { replId }));
          assert.equal(again.seq, first.seq, label);
          assert.equal(again.value, "'ran 75 s'", label);
          const history = await agent.call('get-repl-history', { replId });
          assert.doesNotMatch(JSON.stringify(history), /KeyboardInterrupt/, `${label}: never interrupted`);
        } finally {
          await agent.close();
        }
      }),
    );
  });

  it('a cancel before the answer interrupts the code; a client that stops waiting (its own limit) leaves it running', async () => {
    await Promise.all(
      routes.map(async ({ label, closesToCancel, connect, newRepl }) => {
        const replId = await newRepl();
        const agent = await connect();
        try {
          await agent.call('run-python-in-repl', { replId, pythonCode: 'kept = 1' });
          const cancel = new AbortController();
          await assert.rejects(
            agent.call(
              'run-python-in-repl',
              { replId, pythonCode: ENDLESS },
              { signal: cancel.signal, onProgress: (line) => line === 'looping' && cancel.abort('stop') },
            ),
          );
          const interrupted = structured(await agent.call('wait-for-repl-instruction', { replId }));
          assert.match(interrupted.error ?? '', /KeyboardInterrupt/, `${label}: the cancel interrupted the code`);

          // A client that gives a call 2 s: its timeout cancels the call, saying so, and the code runs
          // on to its end; over 2026-07-28 HTTP, the call's request closes as for a cancel.
          await assert.rejects(
            agent.call('run-python-in-repl', { replId, pythonCode: 'import time\ntime.sleep(4)\nkept + 41' }, { timeoutMs: 2000 }),
            /timed out/i,
          );
          let came: RunOutput | undefined;
          await eventually(
            async () => !(came = structured(await agent.call('wait-for-repl-instruction', { replId }))).running,
            30_000,
            `${label}: the run to end`,
          );
          if (closesToCancel) assert.match(came!.error ?? '', /KeyboardInterrupt/, `${label}: a closed request is a cancel`);
          else assert.equal(came!.value, '42', `${label}: not interrupted by the client's timeout`);
        } finally {
          await agent.close();
        }
      }),
    );
  });

  it('an install that outlasts the answer time answers that it goes on; the same call again waits for it', async () => {
    // A folder of wheels that takes 4 s to list, as a slow package index does.
    const wheel = execFileSync(TEST_PYTHON, [MAKE_WHEEL, data.dir, 'slowpkg', '1.0', JSON.stringify({ 'slowpkg/__init__.py': 'VALUE = 8\n' })], {
      encoding: 'utf8',
    }).trim();
    const index = createServer((req, res) => {
      if (req.url === '/') {
        setTimeout(() => res.writeHead(200, { 'content-type': 'text/html' }).end(`<a href="${basename(wheel)}">${basename(wheel)}</a>`), 4000);
        return;
      }
      void readFile(wheel).then((bytes) => res.end(bytes));
    }).listen(0, '127.0.0.1');
    await once(index, 'listening');
    process.env.PIP_NO_INDEX = '1';
    const agent = await agentV1(new HttpV1(new URL(`${server.url}/mcp?answerWithin=1`), bearer(server.token)));
    try {
      const replId = (await server.manager.create({ engine: 'python', python: TEST_PYTHON })).name;
      const packages = ['slowpkg', `--find-links http://127.0.0.1:${(index.address() as { port: number }).port}/`];
      const text = async () => ((await agent.call('install-python-packages', { replId, packages })).content[0] as { text: string }).text;
      const first = await text();
      assert.match(first, new RegExp(`^Still installing into ${replId} after 1 s; it goes on.*Call install-python-packages again with the same packages`));
      let last = first;
      while (last.startsWith('Still installing')) last = await text();
      assert.equal(last, 'Installed: Successfully installed slowpkg-1.0', 'the calls after the first joined it');
      const imported = structured(await agent.call('run-python-in-repl', { replId, pythonCode: 'import slowpkg\nslowpkg.VALUE' }));
      assert.equal(imported.value, '8');
    } finally {
      delete process.env.PIP_NO_INDEX;
      await agent.close();
      index.close();
    }
  });
});
