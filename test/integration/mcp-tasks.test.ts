import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  Client,
  StreamableHTTPClientTransport,
  SUBSCRIPTION_ID_META_KEY,
  type CallToolResult,
  type SubscriptionFilter,
  type Transport,
  type VersionNegotiationMode,
} from '@modelcontextprotocol/client';
import { TASKS_EXTENSION_ID_V2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { resultFromTaskOutcome, type TaskEnabledSession, type TaskView } from '@modelcontextprotocol/ext-tasks/client';
import { LocalServer } from '../../src/server/local-server.ts';
import { finished } from '../helpers/processes.ts';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';
import { httpDispatch, taskSession, transportDispatch } from '../helpers/task-requester.ts';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const MAKE_WHEEL = fileURLToPath(new URL('../fixtures/make_wheel.py', import.meta.url));

/** A loop of 20 s that says where it is every second. */
const LOOP = 'import time\nfor step in range(20):\n    print(f"step {step}", flush=True)\n    time.sleep(1)\n"looped"';

/** Where a server is, and the data dir it owns. */
interface Served {
  url: string;
  token: string;
  dataDir: string;
}

interface Connection {
  transport(served: Served): Transport;
  mode: VersionNegotiationMode;
  modern: boolean;
}

const http = ({ url, token }: Served) =>
  new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const stdio = ({ dataDir }: Served) =>
  new StdioClientTransport({
    command: process.execPath,
    args: [CLI, '--data-dir', dataDir, 'mcp'],
    env: { ...process.env } as Record<string, string>,
    stderr: 'pipe',
  });

const CONNECTIONS: Record<string, Connection> = {
  'streamable HTTP, 2025-11-25 (experimental tasks)': { transport: http, mode: 'legacy', modern: false },
  'streamable HTTP, 2026-07-28 (the Tasks extension)': { transport: http, mode: 'auto', modern: true },
  'stdio, 2025-11-25 (experimental tasks)': { transport: stdio, mode: 'legacy', modern: false },
  'stdio, 2026-07-28 (the Tasks extension)': { transport: stdio, mode: { pin: '2026-07-28' }, modern: true },
};

/** A connected client and its task session; `close` ends both. */
async function connect(served: Served, connection: Connection) {
  const client = new Client({ name: 'perennial-tests', version: '1.0.0' }, { versionNegotiation: { mode: connection.mode } });
  const transport = connection.transport(served);
  await client.connect(transport);
  const dispatch = connection.modern
    ? transport instanceof StdioClientTransport
      ? transportDispatch(transport)
      : httpDispatch(`${served.url}/mcp`, served.token)
    : undefined;
  const session = taskSession(client, dispatch);
  const close = async () => {
    await session.close();
    await client.close();
  };
  return { client, session, close };
}

async function newRepl(client: Client): Promise<string> {
  return ((await client.callTool({ name: 'create-python-repl', arguments: {} })).structuredContent as { replId: string }).replId;
}

const served = (server: LocalServer): Served => ({ url: server.url, token: server.token, dataDir: server.manager.dataDir });

/** The task's views as the requester sees them, and its result once done. */
async function settle(session: TaskEnabledSession, replId: string, pythonCode: string) {
  const execution = await session.callTool('run-python-in-repl', { replId, pythonCode, timeoutSeconds: 120 }, { task: { preference: 'prefer' } });
  const seen: TaskView[] = [];
  const { outcome } = await execution.settle({ onEvent: (event) => void (event.type === 'task' && seen.push(event.task)) });
  return { kind: execution.kind, seen, outcome };
}

/** What a run's result says, without what differs between two runs of the same code (its number and time). */
function comparable(result: CallToolResult): unknown {
  const { runtimeMs: _runtime, seq: _seq, ...content } = result.structuredContent as Record<string, unknown>;
  return { content: result.content, structured: content, isError: result.isError };
}

describe('MCP tasks', { timeout: 300_000 }, () => {
  let server: LocalServer;
  let data: { dir: string; cleanup(): Promise<void> };

  before(async () => {
    data = await tempDataDir();
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
  });
  after(async () => {
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await data.cleanup();
  });

  it('on every transport, a 20 s loop runs as a task: polled, its output growing, its result the direct call’s', async () => {
    const direct = (async () => {
      const { client, close } = await connect(served(server), CONNECTIONS['streamable HTTP, 2025-11-25 (experimental tasks)']!);
      try {
        return (await client.callTool({
          name: 'run-python-in-repl',
          arguments: { replId: await newRepl(client), pythonCode: LOOP, timeoutSeconds: 120 },
        })) as CallToolResult;
      } finally {
        await close();
      }
    })();
    const tasks = Object.entries(CONNECTIONS).map(async ([label, connection]) => {
      const { client, session, close } = await connect(served(server), connection);
      try {
        const { kind, seen, outcome } = await settle(session, await newRepl(client), LOOP);
        assert.equal(kind, 'task', label);
        const steps = seen.map((view) => /last output: step (\d+)/.exec(view.statusMessage ?? '')?.[1]).filter((step) => step !== undefined);
        assert.ok(new Set(steps).size >= 2, `${label}: the output seen growing (${JSON.stringify(seen.map((v) => v.statusMessage))})`);
        assert.deepEqual(
          steps.map(Number),
          [...steps.map(Number)].sort((a, b) => a - b),
          label,
        );
        assert.equal(seen.at(-1)!.status, 'completed', label);
        return [label, resultFromTaskOutcome(outcome) as CallToolResult] as const;
      } finally {
        await close();
      }
    });
    const directResult = await direct;
    for (const [label, result] of await Promise.all(tasks)) assert.deepEqual(comparable(result), comparable(directResult), label);
    assert.equal((directResult.structuredContent as { value: string }).value, "'looped'");
  });

  for (const [label, connection] of Object.entries(CONNECTIONS)) {
    it(`${label}: cancelling a task interrupts its code, and the REPL lives on with its state`, async () => {
      const { client, session, close } = await connect(served(server), connection);
      try {
        const replId = await newRepl(client);
        await client.callTool({ name: 'run-python-in-repl', arguments: { replId, pythonCode: 'kept = "before the task"' } });
        const execution = await session.callTool('run-python-in-repl', { replId, pythonCode: LOOP, timeoutSeconds: 120 }, { task: { preference: 'prefer' } });
        assert.equal(execution.kind, 'task');
        // Once it runs (its first line is out), it is cancelled.
        for await (const event of execution.updates()) if (event.type === 'task' && /last output: step/.test(event.task.statusMessage ?? '')) break;
        await execution.cancel();
        const after = await client.callTool({ name: 'run-python-in-repl', arguments: { replId, pythonCode: 'kept, step' } });
        assert.match((after.structuredContent as { value: string }).value, /^\('before the task', \d+\)$/);
        const history = (await client.callTool({ name: 'get-repl-history', arguments: { replId, last: 2 } })).structuredContent as {
          history: Array<{ result: { error?: string } }>;
        };
        assert.match(history.history[0]!.result.error ?? '', /KeyboardInterrupt/);
        const task = await session.task(execution.handle.taskId).snapshot();
        assert.equal(task.status, 'cancelled');
        assert.match(task.statusMessage ?? '', /^Cancelled after .*: the code was interrupted; the REPL's state is kept\.$/);
      } finally {
        await close();
      }
    });
  }

  it('answers at once, without a task, quick work on 2026-07-28, and a client that does not take tasks', async () => {
    const { client, session, close } = await connect(served(server), CONNECTIONS['streamable HTTP, 2026-07-28 (the Tasks extension)']!);
    try {
      const quick = await session.callTool('run-python-in-repl', { replId: await newRepl(client), pythonCode: '6 * 7' });
      assert.equal(quick.kind, 'immediate');
      assert.equal(((resultFromTaskOutcome((await quick.settle()).outcome) as CallToolResult).structuredContent as { value: string }).value, '42');
    } finally {
      await close();
    }
    const plain = new Client({ name: 'perennial-tests', version: '1.0.0' }, { versionNegotiation: { mode: 'legacy' } });
    await plain.connect(http(served(server)));
    try {
      const tool = (await plain.listTools()).tools.find((t) => t.name === 'run-python-in-repl')!;
      assert.deepEqual(tool.execution, { taskSupport: 'optional' });
      const result = (await plain.callTool({
        name: 'run-python-in-repl',
        arguments: { replId: await newRepl(plain), pythonCode: 'import time\ntime.sleep(1.5)\n6 * 7' },
      })) as CallToolResult;
      assert.equal((result.structuredContent as { value: string }).value, '42');
    } finally {
      await plain.close();
    }
  });

  it('a 2026-07-28 client subscribed to a task hears of its status as it changes, on both transports; one without the Tasks extension is told it needs it', async () => {
    const loop = 'import time\nfor step in range(4):\n    print(f"step {step}", flush=True)\n    time.sleep(1)\n"looped"';
    const modern = Object.entries(CONNECTIONS).filter(([, connection]) => connection.modern);
    await Promise.all(
      modern.map(async ([label, connection]) => {
        const client = new Client(
          { name: 'perennial-tests', version: '1.0.0' },
          { capabilities: { extensions: { [TASKS_EXTENSION_ID_V2]: {} } }, versionNegotiation: { mode: connection.mode } },
        );
        const heard: Array<{ method: string; params?: Record<string, unknown> }> = [];
        client.fallbackNotificationHandler = async (notification) => void heard.push(notification);
        const transport = connection.transport(served(server));
        await client.connect(transport);
        const session = taskSession(
          client,
          transport instanceof StdioClientTransport ? transportDispatch(transport) : httpDispatch(`${server.url}/mcp`, server.token),
        );
        try {
          const execution = await session.callTool(
            'run-python-in-repl',
            { replId: await newRepl(client), pythonCode: loop, timeoutSeconds: 60 },
            { task: { preference: 'prefer' } },
          );
          assert.equal(execution.kind, 'task', label);
          const taskId = execution.handle!.taskId;
          const subscription = await client.listen({ taskIds: [taskId, 'no-such-task'] } as SubscriptionFilter);
          const statuses = () =>
            heard
              .filter((n) => n.method === 'notifications/tasks')
              .map((n) => n.params as { taskId: string; status: string; statusMessage: string; result?: CallToolResult; _meta: Record<string, unknown> });
          await eventually(() => statuses().some((task) => task.status === 'completed'), 30_000, `${label}: the task's end, told`);
          await subscription.close();
          const told = statuses();
          assert.ok(
            told.every((task) => task.taskId === taskId && task._meta[SUBSCRIPTION_ID_META_KEY] !== undefined),
            `${label}: only the task asked for, on the subscription`,
          );
          assert.ok(
            told.some((task) => task.status === 'working' && /last output: step \d/.test(task.statusMessage)),
            `${label}: ${JSON.stringify(told)}`,
          );
          assert.equal((told.at(-1)!.result!.structuredContent as { value: string }).value, "'looped'", label);
        } finally {
          await session.close();
          await client.close();
        }
      }),
    );
    const { client, close } = await connect(served(server), CONNECTIONS['stdio, 2026-07-28 (the Tasks extension)']!);
    try {
      await assert.rejects(client.listen({ taskIds: ['any'] } as SubscriptionFilter), (error: { code?: number }) => error.code === -32021);
    } finally {
      await close();
    }
  });
});

describe('install-python-packages as a task', { timeout: 300_000 }, () => {
  it('installs as a task of the server that runs it, with pip’s result as its own', async () => {
    // pip finds a wheel built here, offline; the REPL's interpreter is a venv of the test's.
    const dir = await mkdtemp(join(tmpdir(), 'perennial-task-install-'));
    const data = await tempDataDir();
    const pip = { PIP_NO_INDEX: '1', PIP_FIND_LINKS: dir };
    try {
      execFileSync('python3', ['-m', 'venv', join(dir, 'venv')]);
      execFileSync('python3', [MAKE_WHEEL, dir, 'taskpkg', '1.0', JSON.stringify({ 'taskpkg/__init__.py': 'VALUE = "as a task"\n' })]);
      Object.assign(process.env, pip, { PERENNIAL_PYTHON: join(dir, 'venv', 'bin', 'python') });
      const server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
      try {
        const { client, session, close } = await connect(served(server), CONNECTIONS['streamable HTTP, 2025-11-25 (experimental tasks)']!);
        try {
          const replId = await newRepl(client);
          const execution = await session.callTool('install-python-packages', { replId, packages: ['taskpkg'] }, { task: { preference: 'prefer' } });
          assert.equal(execution.kind, 'task');
          const result = resultFromTaskOutcome((await execution.settle()).outcome) as CallToolResult;
          assert.deepEqual(result.content, [{ type: 'text', text: 'Installed: Successfully installed taskpkg-1.0' }]);
          const imported = await client.callTool({ name: 'run-python-in-repl', arguments: { replId, pythonCode: 'import taskpkg\ntaskpkg.VALUE' } });
          assert.equal((imported.structuredContent as { value: string }).value, "'as a task'");
        } finally {
          await close();
        }
      } finally {
        await server.close();
      }
    } finally {
      for (const name of [...Object.keys(pip), 'PERENNIAL_PYTHON']) delete process.env[name];
      await data.cleanup();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('MCP tasks across restarts', { timeout: 300_000 }, () => {
  it('a finished task is read after `perennial stop`, from a new connection of either generation, on another transport', async () => {
    const data = await tempDataDir();
    const env = { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON };
    const server = await serve(data.dir, env);
    try {
      const tasks = [];
      for (const label of ['streamable HTTP, 2025-11-25 (experimental tasks)', 'streamable HTTP, 2026-07-28 (the Tasks extension)']) {
        const { client, session, close } = await connect({ ...server.info, dataDir: data.dir }, CONNECTIONS[label]!);
        try {
          const replId = await newRepl(client);
          const execution = await session.callTool(
            'run-python-in-repl',
            { replId, pythonCode: 'import time\nprint("slept", flush=True)\ntime.sleep(1.5)\n6 * 7' },
            { task: { preference: 'prefer' } },
          );
          assert.equal(execution.kind, 'task', label);
          const result = resultFromTaskOutcome((await execution.settle({ close: false })).outcome) as CallToolResult;
          if (execution.kind === 'task') tasks.push({ label, replId, reference: execution.serializeReference(), result });
          await execution.detach();
        } finally {
          await close();
        }
      }
      const stop = await finished(spawn(process.execPath, [CLI, '--data-dir', data.dir, 'stop'], { env }));
      assert.equal(stop.code, 0, stop.stderr);
      assert.equal((await server.done).code, 0);
      // `perennial mcp` starts a server of its own on the data dir, as an MCP client would have it.
      for (const { label, reference, result } of tasks) {
        const stdioLabel = label.replace('streamable HTTP', 'stdio');
        const { session, close } = await connect({ url: '', token: '', dataDir: data.dir }, CONNECTIONS[stdioLabel]!);
        try {
          const resumed = resultFromTaskOutcome((await (await session.resumeTask(reference)).settle()).outcome) as CallToolResult;
          assert.equal((resumed.structuredContent as { value: string }).value, '42', stdioLabel);
          assert.equal((resumed.structuredContent as { stdout: string }).stdout, 'slept', stdioLabel);
          assert.deepEqual(comparable(resumed), comparable(result), stdioLabel);
        } finally {
          await close();
        }
      }
      // A task is kept as long as its REPL: once the REPL is deleted, a process that does not hold the task says so.
      const { client, close } = await connect({ url: '', token: '', dataDir: data.dir }, CONNECTIONS['stdio, 2025-11-25 (experimental tasks)']!);
      try {
        await client.callTool({ name: 'delete-python-repl', arguments: { replId: tasks[0]!.replId } });
      } finally {
        await close();
      }
      const fresh = await connect({ url: '', token: '', dataDir: data.dir }, CONNECTIONS['stdio, 2025-11-25 (experimental tasks)']!);
      try {
        await assert.rejects(fresh.session.task(tasks[0]!.reference.taskId).snapshot(), /Task not found: .* \(its REPL \S+ no longer exists\)/);
      } finally {
        await fresh.close();
      }
    } finally {
      server.kill();
      await finished(spawn(process.execPath, [CLI, '--data-dir', data.dir, 'stop'], { env }));
      await data.cleanup();
    }
  });

  it('a task whose server was killed ends failed, saying what its REPL went back to', async () => {
    const data = await tempDataDir();
    const env = { ...process.env, PERENNIAL_PYTHON: TEST_PYTHON };
    const server = await serve(data.dir, env);
    try {
      const connection = CONNECTIONS['streamable HTTP, 2026-07-28 (the Tasks extension)']!;
      const { client, session, close } = await connect({ ...server.info, dataDir: data.dir }, connection);
      const replId = await newRepl(client);
      await client.callTool({ name: 'run-python-in-repl', arguments: { replId, pythonCode: 'kept = 1' } });
      await client.callTool({ name: 'checkpoint-python-repl', arguments: { replId } });
      const execution = await session.callTool('run-python-in-repl', { replId, pythonCode: LOOP, timeoutSeconds: 120 });
      assert.equal(execution.kind, 'task');
      const reference = execution.kind === 'task' ? execution.serializeReference() : undefined;
      for await (const event of execution.updates()) if (event.type === 'task' && /last output: step/.test(event.task.statusMessage ?? '')) break;
      await execution.detach();
      server.kill();
      await server.done;
      await close().catch(() => {});
      process.env.PERENNIAL_PYTHON = TEST_PYTHON;
      const again = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python' });
      try {
        const { session: resumer, close: closeAgain } = await connect(served(again), connection);
        try {
          const { outcome } = await (await resumer.resumeTask(reference!)).settle();
          assert.equal(outcome.status, 'failed');
          assert.match(
            outcome.status === 'failed' ? outcome.error.message : '',
            /^The server stopped while this instruction ran: its effects are lost\. The machine goes back to its snapshot of .*\. Effects of instructions \d+–\d+ are lost\./,
          );
          assert.equal((await resumer.task(reference!.taskId).snapshot()).status, 'failed');
        } finally {
          await closeAgain();
        }
      } finally {
        await again.close();
        delete process.env.PERENNIAL_PYTHON;
      }
    } finally {
      server.kill();
      await data.cleanup();
    }
  });
});

/** `perennial serve` on `dataDir`, as a process of its own: where it listens, and its exit; `kill` is a kill -9. */
async function serve(dataDir: string, env: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [CLI, '--data-dir', dataDir, 'serve', '--engine', 'python', '--port', '0'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const done = finished(child);
  const infoPath = join(dataDir, 'server.json');
  await eventually(() => existsSync(infoPath), 20_000, 'server.json');
  const info = JSON.parse(readFileSync(infoPath, 'utf8')) as { url: string; token: string };
  return { info, done, kill: () => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')) };
}
