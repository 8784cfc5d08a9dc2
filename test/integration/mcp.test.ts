import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  Client,
  SSEClientTransport,
  StreamableHTTPClientTransport,
  type CallToolResult,
  type ImageContent,
  type ResourceLink,
  type Transport,
  type VersionNegotiationMode,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { LocalServer } from '../../src/server/local-server.ts';
import { foreverVMOnlyProxy } from '../helpers/forevervm-only-proxy.ts';
import { eventually, otherPython, tempDataDir } from '../helpers/machines.ts';
import { CLI, call, HEARTBEAT_MS, startPythonServer, stdioTransport as stdio, streamableTransport as streamable, textOf } from '../helpers/mcp-clients.ts';

const TOOL_NAMES = [
  'checkpoint-python-repl',
  'create-python-repl',
  'delete-python-repl',
  'describe-python-repl',
  'follow-repl-instruction',
  'fork-python-repl',
  'get-repl-history',
  'get-repl-variable',
  'inspect-repl-object',
  'install-python-packages',
  'interrupt-python-repl',
  'list-python-repls',
  'list-repl-checkpoints',
  'list-repl-files',
  'list-repl-variables',
  'read-repl-file',
  'reset-python-repl',
  'rollback-python-repl',
  'run-file-in-repl',
  'run-python-in-repl',
  'wait-for-repl-instruction',
  'write-repl-file',
];

/** inspect-repl-object on a function with a docstring, a function reached through a module, and what it refuses. */
async function checkInspect(client: Client, replId: string): Promise<void> {
  await call(client, 'run-python-in-repl', {
    replId,
    pythonCode: 'import json\ndef area(w: float, h: float = 1.0) -> float:\n    """The area of a w by h rectangle."""\n    return w * h',
  });
  const area = await call(client, 'inspect-repl-object', { replId, expression: 'area' });
  assert.deepEqual(area.structuredContent, {
    name: 'area',
    type: 'function',
    signature: '(w: float, h: float = 1.0) -> float',
    doc: 'The area of a w by h rectangle.',
  });
  assert.equal(textOf(area), 'area: function\nSignature: area(w: float, h: float = 1.0) -> float\n\nThe area of a w by h rectangle.');
  const dumps = (await call(client, 'inspect-repl-object', { replId, expression: 'json.dumps' })).structuredContent as {
    type: string;
    signature: string;
    doc: string;
  };
  assert.equal(dumps.type, 'function');
  assert.match(dumps.signature, /^\(obj, \*, skipkeys=False/);
  assert.match(dumps.doc, /^Serialize ``obj`` to a JSON formatted ``str``/);
  const missing = await call(client, 'inspect-repl-object', { replId, expression: 'nowhere.attr' });
  assert.equal(missing.isError, true);
  assert.match(textOf(missing), /name 'nowhere' is not defined/);
  const called = await call(client, 'inspect-repl-object', { replId, expression: 'area(2)' });
  assert.equal(called.isError, true);
  assert.match(textOf(called), /not a dotted name/);
}

/** Code that draws three figures, each different. */
const PLOT_THREE = 'import matplotlib.pyplot as plt\nfor k in range(3):\n    plt.figure()\n    plt.plot([1, 4, 9][k:])';

/** How a test client reaches the server, and in which protocol era it opens. */
interface Connection {
  transport(server: LocalServer): Transport;
  mode: VersionNegotiationMode;
  version: string;
}

describe('MCP server', { timeout: 480_000 }, () => {
  /**
   * The same tools through both implementations of the client: `perennial mcp` (stdio) reaches the
   * server over HTTP, and the server's own /mcp and /sse call its machines in process.
   */
  const connections: Record<string, Connection> = {
    'stdio, 2025-11-25 (perennial mcp, over the HTTP client)': { transport: stdio, mode: 'legacy', version: '2025-11-25' },
    'stdio, 2026-07-28': { transport: stdio, mode: { pin: '2026-07-28' }, version: '2026-07-28' },
    'streamable HTTP on the local server (in process), 2025-11-25 with a session': { transport: streamable, mode: 'legacy', version: '2025-11-25' },
    'streamable HTTP on the local server (in process), 2026-07-28': { transport: streamable, mode: 'auto', version: '2026-07-28' },
    'legacy HTTP+SSE on the local server (in process), 2024-11-05 transport': {
      transport: (server) => {
        const headers = { Authorization: `Bearer ${server.token}` };
        return new SSEClientTransport(new URL(`${server.url}/sse`), {
          requestInit: { headers },
          eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
        });
      },
      mode: 'legacy',
      version: '2025-11-25',
    },
  };

  for (const [name, connection] of Object.entries(connections)) {
    describe(`over ${name}`, () => {
      let server: LocalServer;
      let stopServer: () => Promise<void>;
      let client: Client;

      before(async () => {
        ({ server, stop: stopServer } = await startPythonServer());
        client = new Client({ name: 'perennial-tests', version: '1.0.0' }, { versionNegotiation: { mode: connection.mode } });
        await client.connect(connection.transport(server));
        assert.equal(client.getNegotiatedProtocolVersion(), connection.version);
      });
      after(async () => {
        await client.close();
        await stopServer();
      });

      it('lists every tool with its schema and annotations, and tells agents how to use them', async () => {
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), TOOL_NAMES);
        const run = tools.find((t) => t.name === 'run-python-in-repl')!;
        assert.deepEqual(Object.keys(run.inputSchema.properties ?? {}).sort(), ['pythonCode', 'replId', 'timeoutSeconds']);
        assert.deepEqual(run.inputSchema.required?.sort(), ['pythonCode', 'replId']);
        assert.equal(run.annotations?.readOnlyHint, false);
        assert.ok(run.outputSchema);
        assert.equal(tools.find((t) => t.name === 'delete-python-repl')!.annotations?.destructiveHint, true);
        assert.match(client.getInstructions() ?? '', /create-python-repl/);
        // Icons for light and dark themes, inline, on the server and on each tool.
        const icons = client.getServerVersion()?.icons ?? [];
        assert.deepEqual(
          icons.map((i) => [i.theme, i.mimeType, i.src.slice(0, 26)]),
          [
            ['light', 'image/svg+xml', 'data:image/svg+xml;base64,'],
            ['dark', 'image/svg+xml', 'data:image/svg+xml;base64,'],
          ],
        );
        assert.match(Buffer.from(icons[0]!.src.split(',')[1]!, 'base64').toString(), /^<svg [^>]*stroke="#1f6f43"/);
        assert.ok(tools.every((t) => t.icons?.length === 2));
        // The MCP App view: linked from the tools whose results it shows, with the tool only it calls kept from the model.
        const viewOf = (tool: string) => (tools.find((t) => t.name === tool)!._meta as { ui?: { resourceUri?: string } } | undefined)?.ui?.resourceUri;
        assert.deepEqual(
          tools.filter((t) => viewOf(t.name)).map((t) => t.name),
          ['create-python-repl', 'run-python-in-repl', 'run-file-in-repl'],
        );
        assert.ok(tools.every((t) => [undefined, 'ui://perennial/machine'].includes(viewOf(t.name))));
        assert.deepEqual(tools.find((t) => t.name === 'describe-python-repl')!._meta, { ui: { visibility: ['app'] } });
        const { resources } = await client.listResources();
        assert.equal(resources.find((r) => r.uri === 'ui://perennial/machine')?.mimeType, 'text/html;profile=mcp-app');
      });

      it('creates a REPL and keeps its state across calls; errors are flagged', async () => {
        const created = await call(client, 'create-python-repl', { engine: 'python' });
        const replId = (created.structuredContent as { replId: string }).replId;
        assert.equal(textOf(created), replId);
        const first = await call(client, 'run-python-in-repl', { replId, pythonCode: 'x = 20\nprint("set")\nx + 1' });
        assert.equal(first.isError, undefined);
        assert.equal(textOf(first), 'set\nOut: 21');
        // What a host without MCP Apps gets, the view linked or not: the content and the structured content, nothing of the view.
        const { _meta: protocolMeta, ...shown } = first;
        assert.deepEqual(Object.keys(shown).sort(), ['content', 'structuredContent']);
        assert.doesNotMatch(JSON.stringify(protocolMeta ?? {}), /ui/);
        assert.deepEqual(
          { ...(first.structuredContent as object), runtimeMs: 0 },
          { stdout: 'set', stderr: '', value: '21', error: null, displayed: [], notes: [], lost: [], figures: [], runtimeMs: 0, seq: 0, running: false },
        );
        const second = await call(client, 'run-python-in-repl', { replId, pythonCode: 'x * 2' });
        assert.equal((second.structuredContent as { value: string }).value, '40');
        const failed = await call(client, 'run-python-in-repl', { replId, pythonCode: '1/0' });
        assert.equal(failed.isError, true);
        assert.match(textOf(failed), /ZeroDivisionError: division by zero/);
        // The same limits as over HTTP and in the manager: one schema.
        const refused = await call(client, 'create-python-repl', { memoryMb: 8 }).then(textOf, (error: Error) => error.message);
        assert.match(refused, /memory is at least 64 MiB/);
        const unknown = await call(client, 'run-python-in-repl', { replId: 'no-such-repl', pythonCode: '1' });
        assert.equal(unknown.isError, true);
        assert.match(textOf(unknown), /does not exist/);
      });

      it('runs a file in the REPL namespace: its definitions stay, its traceback shows its lines', async () => {
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'base = 10' });
        const script = 'def scaled(v):\n    return v * base\n\nresult = scaled(4)\nif __name__ == "__main__":\n    print("main", result)\n';
        await call(client, 'write-repl-file', { replId, path: 'tools/script.py', content: script });
        const ran = await call(client, 'run-file-in-repl', { replId, path: 'tools/script.py' });
        assert.equal(ran.isError, undefined, textOf(ran));
        assert.equal((ran.structuredContent as { stdout: string }).stdout, 'main 40');
        assert.equal(
          ((await call(client, 'run-python-in-repl', { replId, pythonCode: 'scaled(5), result, __file__' })).structuredContent as { value: string }).value,
          "(50, 40, 'tools/script.py')",
        );
        await call(client, 'write-repl-file', { replId, path: 'broken.py', content: 'x = 1\nraise ValueError("line two")\n' });
        const broken = await call(client, 'run-file-in-repl', { replId, path: 'broken.py' });
        assert.equal(broken.isError, true);
        assert.match(textOf(broken), /File "broken.py", line 2, in <module>[\s\S]*ValueError: line two/);
        const missing = await call(client, 'run-file-in-repl', { replId, path: 'nowhere.py' });
        assert.equal(missing.isError, true);
        assert.match(textOf(missing), /FileNotFoundError/);
      });

      it('resets a REPL: its names go, its files stay, a module from its folder is read again', async () => {
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        await call(client, 'write-repl-file', { replId, path: 'helper.py', content: 'VALUE = 1\n' });
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'import helper\nx = helper.VALUE\ndef f():\n    return x' });
        const reset = await call(client, 'reset-python-repl', { replId });
        assert.deepEqual(reset.structuredContent, { cleared: 3 });
        assert.match(textOf(reset), /cleared 3 names; files and packages stay/);
        await call(client, 'write-repl-file', { replId, path: 'helper.py', content: 'VALUE = 2\n' });
        const after = await call(client, 'run-python-in-repl', { replId, pythonCode: '"x" in globals(), __import__("helper").VALUE, __name__' });
        assert.equal((after.structuredContent as { value: string }).value, "(False, 2, '__main__')");
      });

      it('offers the machines, a history and files as resources with completions; a missing one is not found', async () => {
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        await call(client, 'write-repl-file', { replId, path: 'data/table.csv', content: 'a,b\n1,2\n' });
        await call(client, 'write-repl-file', { replId, path: 'data/pixel.bin', content: 'AP8B', encoding: 'base64' });
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'x = 1' });
        const { resources } = await client.listResources();
        assert.ok(resources.some((r) => r.uri === 'perennial://machines'));
        assert.ok(resources.some((r) => r.uri === `perennial://machines/${replId}/history`));
        const { resourceTemplates } = await client.listResourceTemplates();
        assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(), [
          'perennial://machines/{replId}/figures/{seq}/{n}.png',
          'perennial://machines/{replId}/files/{+path}',
          'perennial://machines/{replId}/history',
        ]);
        const read = async (uri: string) => (await client.readResource({ uri })).contents[0] as { mimeType?: string; text?: string; blob?: string };
        assert.ok((JSON.parse((await read('perennial://machines')).text!) as Array<{ name: string }>).some((m) => m.name === replId));
        assert.deepEqual(await read(`perennial://machines/${replId}/files/data/table.csv`), {
          uri: `perennial://machines/${replId}/files/data/table.csv`,
          mimeType: 'text/csv',
          text: 'a,b\n1,2\n',
        });
        const binary = await read(`perennial://machines/${replId}/files/data/pixel.bin`);
        assert.deepEqual([binary.mimeType, binary.blob], ['application/octet-stream', 'AP8B']);
        assert.deepEqual(
          (JSON.parse((await read(`perennial://machines/${replId}/history`)).text!) as Array<{ code: string }>).map((h) => h.code),
          ['x = 1'],
        );
        const complete = async (name: string, value: string) =>
          (
            await client.complete({
              ref: { type: 'ref/resource', uri: 'perennial://machines/{replId}/files/{+path}' },
              argument: { name, value },
              context: { arguments: { replId } },
            })
          ).completion.values;
        assert.deepEqual(await complete('path', 'data/t'), ['data/table.csv']);
        assert.deepEqual(await complete('path', 'da'), ['data/']);
        assert.ok((await complete('replId', replId.slice(0, 6))).includes(replId));
        for (const uri of [`perennial://machines/${replId}/files/nothing.txt`, 'perennial://machines/no-such-repl/history']) {
          await assert.rejects(client.readResource({ uri }), (error: { code?: number; data?: unknown }) => {
            assert.deepEqual([error.code, error.data], [-32602, { uri }], 'not found, as the 2026 spec says');
            return true;
          });
        }
      });

      it('tells the client when REPLs come and go (resources/list_changed)', async () => {
        assert.equal(client.getServerCapabilities()?.resources?.listChanged, true);
        const changed = () => new Promise<void>((resolve) => client.setNotificationHandler('notifications/resources/list_changed', () => resolve()));
        // A 2026-07-28 client asks for change notifications on a stream of their own.
        const subscription = connection.version === '2026-07-28' ? await client.listen({ resourcesListChanged: true }) : undefined;
        try {
          const created = changed();
          const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
          await created;
          const deleted = changed();
          await call(client, 'delete-python-repl', { replId });
          await deleted;
        } finally {
          await subscription?.close();
        }
      });

      it('offers prompts built from what a REPL holds, with argument completions', async () => {
        const { prompts } = await client.listPrompts();
        assert.deepEqual(prompts.map((p) => p.name).sort(), ['debug-last-error', 'explore-data-file', 'resume-repl']);
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'rows = [1, 2, 3]' });
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'mean = sum(rows) / count' });
        await call(client, 'write-repl-file', { replId, path: 'data/sales.csv', content: 'day,amount\n1,10\n' });
        const prompt = async (name: string, args: Record<string, string>) =>
          ((await client.getPrompt({ name, arguments: args })).messages[0]!.content as { text: string }).text;
        const resume = await prompt('resume-repl', { replId });
        assert.match(resume, /`rows` \(list, 3 items\): \[1, 2, 3\]/);
        assert.match(resume, /rows = \[1, 2, 3\][\s\S]*mean = sum\(rows\) \/ count[\s\S]*NameError: name 'count' is not defined/);
        const debug = await prompt('debug-last-error', { replId });
        assert.match(debug, /^This instruction failed[\s\S]*\[1\]\n```\nmean = sum\(rows\) \/ count\n```\nError:[\s\S]*NameError/);
        assert.match(
          await prompt('explore-data-file', { replId, path: 'data/sales.csv' }),
          /^Explore the data file `data\/sales.csv` in the persistent Python REPL `[^`]+`/,
        );
        const complete = async (prompt: string, name: string, value: string) =>
          (await client.complete({ ref: { type: 'ref/prompt', name: prompt }, argument: { name, value }, context: { arguments: { replId } } })).completion
            .values;
        assert.deepEqual(await complete('explore-data-file', 'path', 'data/s'), ['data/sales.csv']);
        assert.ok((await complete('resume-repl', 'replId', replId.slice(0, 6))).includes(replId));
      });

      it('inspects objects: type, signature and docstring, calling nothing', async () => {
        await checkInspect(client, ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId);
      });

      it('sends output lines as progress notifications, and a cancellation interrupts the code', async () => {
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        const progress: Array<{ progress: number; message?: string }> = [];
        await client.callTool(
          { name: 'run-python-in-repl', arguments: { replId, pythonCode: 'import time\nfor i in range(3):\n    print(f"line {i}")\n    time.sleep(0.2)' } },
          {
            onprogress: (p) => progress.push(p),
          },
        );
        assert.ok(progress.length >= 1, 'at least one progress notification');
        assert.ok(
          progress.every((p, i) => i === 0 || p.progress > progress[i - 1]!.progress),
          'progress increases',
        );
        assert.match(progress[0]!.message ?? '', /^line 0$/);

        // Cancelled once it is seen running; only an interrupt frees the machine before its 120 s timeout.
        const abort = new AbortController();
        const long = client.callTool(
          { name: 'run-python-in-repl', arguments: { replId, pythonCode: 'kept = 1\nprint("looping")\nwhile True:\n    pass', timeoutSeconds: 120 } },
          {
            signal: abort.signal,
            onprogress: (p) => p.message === 'looping' && abort.abort('enough'),
          },
        );
        await assert.rejects(long);
        await eventually(
          async () => {
            const r = await call(client, 'run-python-in-repl', { replId, pythonCode: 'kept' });
            return (r.structuredContent as { value: string | null }).value === '1';
          },
          20_000,
          'the machine to be free again',
        );
        const { history } = JSON.parse(textOf(await call(client, 'get-repl-history', { replId }))) as {
          history: Array<{ code: string; result: { error?: string } }>;
        };
        const cancelled = history.find((entry) => entry.code.includes('looping'));
        assert.match(cancelled?.result.error ?? '', /KeyboardInterrupt$/, 'the cancelled call was interrupted, not timed out');
      });

      it("follows an instruction's output as it runs (follow-repl-instruction, for the MCP App view)", async () => {
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        const pythonCode =
          'import sys, time\nfor i in range(600):\n    print("tick", i, flush=True)\n    if i == 2: print("odd", file=sys.stderr, flush=True)\n    time.sleep(0.05)';
        type Followed = { found: boolean; seq: number | null; chunks: Array<{ stream: string; data: string; seq: number }>; next: number; done: boolean };
        const follow = async (args: Record<string, unknown>) =>
          (await call(client, 'follow-repl-instruction', { replId, ...args })).structuredContent as Followed;
        assert.deepEqual(await follow({ pythonCode, waitSeconds: 0 }), { found: false, seq: null, chunks: [], next: 0, done: false });
        const unnamed = await client.callTool({ name: 'follow-repl-instruction', arguments: { replId } });
        assert.equal(unnamed.isError, true);
        assert.match(textOf(unnamed as CallToolResult), /give seq, pythonCode or path/);
        const running = call(client, 'run-python-in-repl', { replId, pythonCode, timeoutSeconds: 0 });
        let first: Followed | undefined;
        await eventually(async () => (first = await follow({ pythonCode, waitSeconds: 5 })).found, 20_000, 'the instruction found by its code');
        assert.equal(first!.done, false);
        assert.ok(first!.chunks.length >= 1);
        // Only what the caller has not had comes next, waited for.
        const second = await follow({ seq: first!.seq, from: first!.next, waitSeconds: 5 });
        assert.ok(second.chunks.length >= 1 && second.chunks[0]!.seq === first!.chunks.at(-1)!.seq + 1, JSON.stringify(second));
        await call(client, 'interrupt-python-repl', { replId });
        await running;
        // Once done, the whole output again, in the order it came, both streams.
        const all = await follow({ seq: first!.seq, waitSeconds: 5 });
        assert.equal(all.done, true);
        assert.deepEqual(
          all.chunks.slice(0, 4).map((c) => [c.stream, c.data]),
          [
            ['stdout', 'tick 0'],
            ['stdout', 'tick 1'],
            ['stdout', 'tick 2'],
            ['stderr', 'odd'],
          ],
        );
        assert.ok(all.chunks.every((c, i) => i === 0 || c.seq > all.chunks[i - 1]!.seq));
        // A file run is found by its path.
        await call(client, 'write-repl-file', { replId, path: 'hello.py', content: 'print("hello from a file")' });
        await call(client, 'run-file-in-repl', { replId, path: 'hello.py' });
        const file = await follow({ path: 'hello.py', waitSeconds: 5 });
        assert.deepEqual([file.found, file.done, file.chunks.map((c) => c.data)], [true, true, ['hello from a file']]);
        // An instruction that started before `since` is not the one a view waits for, though its code is.
        const later = new Date(Date.now() + 60_000).toISOString();
        assert.equal((await follow({ path: 'hello.py', since: later, waitSeconds: 0 })).found, false);
        assert.equal((await follow({ path: 'hello.py', since: new Date(Date.now() - 60_000).toISOString(), waitSeconds: 0 })).found, true);
        const badTime = await client.callTool({ name: 'follow-repl-instruction', arguments: { replId, path: 'hello.py', since: 'yesterday' } });
        assert.equal(badTime.isError, true);
      });

      it('keeps a silent call alive with progress (elapsed time), past a client timeout that progress resets', async () => {
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        const progress: Array<{ progress: number; message?: string }> = [];
        // The SDK client drops a call after 3 s without progress, as clients do after a few minutes;
        // the server breaks a silence after 2 s (10 s unless set). The cell waits, silent, until a
        // heartbeat says it has run longer than the client waits: then the file it waits for appears.
        const clientTimeoutMs = 3_000;
        const folder = await mkdtemp(join(tmpdir(), 'perennial-silent-'));
        const flag = join(folder, 'go');
        const wait = `import os, time\nwhile not os.path.exists(${JSON.stringify(flag)}):\n    time.sleep(0.05)\n"waited"`;
        const result = await client
          .callTool(
            { name: 'run-python-in-repl', arguments: { replId, pythonCode: wait, timeoutSeconds: 60 } },
            {
              onprogress: (p) => {
                progress.push(p);
                const seconds = Number(/\((\d+) s\)$/.exec(p.message ?? '')?.[1]);
                if (seconds * 1000 > clientTimeoutMs) writeFileSync(flag, '');
              },
              timeout: clientTimeoutMs,
              resetTimeoutOnProgress: true,
            },
          )
          .finally(() => rm(folder, { recursive: true, force: true }));
        assert.equal((result.structuredContent as { value: string }).value, "'waited'");
        const seconds = progress.map((p) => Number(/^Still running \((\d+) s\)$/.exec(p.message ?? '')?.[1]));
        assert.ok(progress.length >= 2 && seconds.every((n) => n >= HEARTBEAT_MS / 1000), `heartbeats with the elapsed time: ${JSON.stringify(progress)}`);
        assert.ok(
          seconds.every((n, i) => i === 0 || n > seconds[i - 1]!),
          'the elapsed time grows',
        );
      });

      it('takes timeoutSeconds 0 as no limit; a call its timeout stopped says how to give it longer', async () => {
        const replId = ((await call(client, 'create-python-repl', { engine: 'python' })).structuredContent as { replId: string }).replId;
        const code = 'import time\ntime.sleep(1.5)\n"slept"';
        const stopped = await call(client, 'run-python-in-repl', { replId, pythonCode: code, timeoutSeconds: 1 });
        const view = stopped.structuredContent as { error: string; notes: string[] };
        assert.match(view.error, /^Timed out after 1 s/);
        assert.deepEqual(view.notes, ['Give it longer with the timeoutSeconds argument (0: no limit).']);
        assert.match(textOf(stopped), /Give it longer with the timeoutSeconds argument \(0: no limit\)\./);
        const unlimited = await call(client, 'run-python-in-repl', { replId, pythonCode: code, timeoutSeconds: 0 });
        assert.equal((unlimited.structuredContent as { value: string }).value, "'slept'");
      });

      it('returns a figure as an image and a link to its resource; past the inline cap, only links, and says so', async () => {
        const replId = ((await call(client, 'create-python-repl', {})).structuredContent as { replId: string }).replId;
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'import matplotlib.pyplot as plt\ndata = [1, 4, 9]' });
        const plotted = await call(client, 'run-python-in-repl', { replId, pythonCode: 'plt.plot(data)\nlen(data)' });
        const uri = `perennial://machines/${replId}/figures/1/1.png`;
        const [image, link] = plotted.content.filter((c) => c.type !== 'text') as [ImageContent, ResourceLink];
        assert.equal(image.mimeType, 'image/png');
        assert.deepEqual([...Buffer.from(image.data, 'base64').subarray(1, 4)], [...Buffer.from('PNG')]);
        assert.deepEqual(link, {
          type: 'resource_link',
          uri,
          name: `figure-1-1.png`,
          title: `Figure 1 of instruction 1 in ${replId}`,
          mimeType: 'image/png',
          size: Buffer.from(image.data, 'base64').length,
          annotations: { audience: ['user'] },
        });
        assert.equal(textOf(plotted), 'Out: 3', 'one figure is shown: nothing to say');
        assert.deepEqual((plotted.structuredContent as { figures: unknown }).figures, [{ uri, inline: true }]);
        const read = await client.readResource({ uri });
        assert.deepEqual(read.contents, [{ uri, mimeType: 'image/png', blob: image.data }]);

        const three = await call(client, 'run-python-in-repl', { replId, pythonCode: PLOT_THREE });
        const uris = [1, 2, 3].map((n) => `perennial://machines/${replId}/figures/2/${n}.png`);
        assert.deepEqual(
          three.content.map((c) => c.type),
          ['text', 'image', 'resource_link', 'resource_link', 'resource_link'],
        );
        const links = three.content.filter((c) => c.type === 'resource_link') as ResourceLink[];
        assert.deepEqual(
          links.map((l) => [l.uri, l.annotations]),
          [
            [uris[0], { audience: ['user'] }],
            [uris[1], undefined],
            [uris[2], undefined],
          ],
        );
        const note = `3 figures: 1 shown inline, at most 1 per result; read the rest as resources: ${uris[1]}, ${uris[2]}`;
        assert.equal(textOf(three), `[perennial] ${note}`);
        const structured = three.structuredContent as { figures: unknown; notes: string[] };
        assert.deepEqual(structured.figures, [
          { uri: uris[0], inline: true },
          { uri: uris[1], inline: false },
          { uri: uris[2], inline: false },
        ]);
        assert.deepEqual(structured.notes, [note]);
        const third = (await client.readResource({ uri: uris[2]! })).contents[0] as { blob: string };
        assert.notEqual(third.blob, (three.content[1] as ImageContent).data, 'each figure is its own');
        // The history names figures by their URIs, without their base64.
        const history = JSON.parse(textOf(await call(client, 'get-repl-history', { replId }))) as {
          history: Array<{ result: { data: Record<string, unknown> | null } }>;
        };
        assert.deepEqual(
          history.history.map((entry) => entry.result.data),
          [null, { figures: [uri] }, { figures: uris }],
        );
        const historyResource = (await client.readResource({ uri: `perennial://machines/${replId}/history` })).contents[0] as { text: string };
        assert.deepEqual(
          (JSON.parse(historyResource.text) as typeof history.history).map((entry) => entry.result.data),
          [null, { figures: [uri] }, { figures: uris }],
        );
        // Figures come from the history: they outlive a swap.
        await server.manager.swap(replId);
        assert.deepEqual((await client.readResource({ uri: uris[2]! })).contents[0], { uri: uris[2], mimeType: 'image/png', blob: third.blob });
        for (const missing of [
          `perennial://machines/${replId}/figures/2/4.png`,
          `perennial://machines/${replId}/figures/0/1.png`,
          `perennial://machines/${replId}/figures/99/1.png`,
          'perennial://machines/no-such-repl/figures/1/1.png',
        ]) {
          await assert.rejects(client.readResource({ uri: missing }), (error: { code?: number; data?: unknown }) => {
            assert.deepEqual([error.code, error.data], [-32602, { uri: missing }]);
            return true;
          });
        }
        await call(client, 'delete-python-repl', { replId });
      });

      it('runs code with state across calls, and serves the other tools', async () => {
        const replId = ((await call(client, 'create-python-repl', { tags: { via: 'http' } })).structuredContent as { replId: string }).replId;
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'data = [1, 4, 9]' });
        // State survives a swap to disk between calls; what cannot is said in the text and the structured content.
        await call(client, 'run-python-in-repl', { replId, pythonCode: 'gen = (d for d in data)' });
        await server.manager.swap(replId);
        assert.equal(server.manager.get(replId).state, 'swapped');
        const resumed = await call(client, 'run-python-in-repl', { replId, pythonCode: 'sum(data)' });
        const structured = resumed.structuredContent as { value: string; notes: string[]; lost: Array<{ name: string }> };
        assert.equal(structured.value, '14');
        assert.deepEqual(
          structured.lost.map((l) => l.name),
          ['gen'],
        );
        assert.match(structured.notes[0]!, /^Not kept across the swap: gen \(a paused generator cannot be pickled/);
        assert.match(textOf(resumed), /Out: 14\n\[perennial\] Not kept across the swap: gen/);
        const variables = JSON.parse(textOf(await call(client, 'list-repl-variables', { replId }))) as { variables: Array<{ name: string }> };
        assert.deepEqual(
          variables.variables.map((v) => v.name),
          ['data'],
        );
        await call(client, 'write-repl-file', { replId, path: 'hello.txt', content: 'hi there' });
        assert.equal((JSON.parse(textOf(await call(client, 'read-repl-file', { replId, path: 'hello.txt' }))) as { content: string }).content, 'hi there');
        const repls = JSON.parse(textOf(await call(client, 'list-python-repls', { tags: { via: 'http' } }))) as { repls: Array<{ name: string }> };
        assert.deepEqual(
          repls.repls.map((r) => r.name),
          [replId],
        );
        const history = JSON.parse(textOf(await call(client, 'get-repl-history', { replId, last: 1 }))) as { history: Array<{ code: string }> };
        assert.equal(history.history[0]!.code, 'sum(data)');
        await call(client, 'delete-python-repl', { replId });
        assert.equal((await call(client, 'run-python-in-repl', { replId, pythonCode: '1' })).isError, true);
      });
    });
  }

  describe('over stdio against a backend with only the ForeverVM protocol (as hosted ForeverVM)', () => {
    let server: LocalServer;
    let stopServer: () => Promise<void>;
    let bare: { url: string; close(): void };
    let client: Client;

    before(async () => {
      ({ server, stop: stopServer } = await startPythonServer());
      bare = await foreverVMOnlyProxy(server.url);
      client = new Client({ name: 'perennial-tests', version: '1.0.0' });
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [CLI, 'mcp', '--backend', 'forevervm'],
          env: { ...process.env, FOREVERVM_BASE_URL: bare.url, FOREVERVM_TOKEN: server.token } as Record<string, string>,
          stderr: 'pipe',
        }),
      );
    });
    after(async () => {
      await client.close();
      bare.close();
      await stopServer();
    });

    it('emulates variables, files and history with instructions and its own record, and says what it cannot do', async () => {
      const replId = ((await call(client, 'create-python-repl', {})).structuredContent as { replId: string }).replId;
      assert.equal(
        ((await call(client, 'run-python-in-repl', { replId, pythonCode: 'count = 3\nwords = ["a", "b"]\ncount' })).structuredContent as { value: string })
          .value,
        '3',
      );
      const variables = JSON.parse(textOf(await call(client, 'list-repl-variables', { replId }))) as { variables: Array<{ name: string; type: string }> };
      assert.deepEqual(
        variables.variables.map((v) => [v.name, v.type]),
        [
          ['count', 'int'],
          ['words', 'list'],
        ],
      );
      assert.equal((JSON.parse(textOf(await call(client, 'get-repl-variable', { replId, name: 'words' }))) as { repr: string }).repr, "['a', 'b']");
      // Figures are read back through ForeverVM's own result endpoint.
      const plotted = await call(client, 'run-python-in-repl', { replId, pythonCode: PLOT_THREE });
      const figures = (plotted.structuredContent as { figures: Array<{ uri: string }> }).figures;
      assert.equal(figures.length, 3);
      const inline = plotted.content.find((c) => c.type === 'image') as ImageContent;
      assert.deepEqual((await client.readResource({ uri: figures[0]!.uri })).contents, [{ uri: figures[0]!.uri, mimeType: 'image/png', blob: inline.data }]);
      await call(client, 'write-repl-file', { replId, path: 'out/note.txt', content: 'emulated' });
      assert.equal((JSON.parse(textOf(await call(client, 'read-repl-file', { replId, path: 'out/note.txt' }))) as { content: string }).content, 'emulated');
      const listing = JSON.parse(textOf(await call(client, 'list-repl-files', { replId, path: 'out' }))) as { entries: Array<{ name: string }> };
      assert.deepEqual(
        listing.entries.map((e) => e.name),
        ['note.txt'],
      );
      const history = JSON.parse(textOf(await call(client, 'get-repl-history', { replId }))) as { history: Array<{ code: string }> };
      assert.deepEqual(
        history.history.map((h) => h.code),
        ['count = 3\nwords = ["a", "b"]\ncount', PLOT_THREE],
        'only what the user ran, not the emulations',
      );
      // The kernel's code ran there for those answers, and went again.
      const traces = '[k for k in globals() if k in ("scope", "answer", "reset") or "perennial" in k], [m for m in __import__("sys").modules if "hosted" in m]';
      assert.equal(((await call(client, 'run-python-in-repl', { replId, pythonCode: traces })).structuredContent as { value: string }).value, '([], [])');
      await checkInspect(client, replId);
      assert.ok(((await call(client, 'reset-python-repl', { replId })).structuredContent as { cleared: number }).cleared >= 4);
      assert.equal(
        ((await call(client, 'run-python-in-repl', { replId, pythonCode: '"area" in globals(), "count" in globals()' })).structuredContent as { value: string })
          .value,
        '(False, False)',
      );
      assert.equal((await call(client, 'interrupt-python-repl', { replId })).isError, undefined);
      const removed = await call(client, 'delete-python-repl', { replId });
      assert.equal(removed.isError, true);
      assert.match(textOf(removed), /This backend cannot delete machines/);
    });
  });

  describe('older protocol versions, each as a client that speaks only it', () => {
    let server: LocalServer;
    let stopServer: () => Promise<void>;
    before(async () => ({ server, stop: stopServer } = await startPythonServer()));
    after(async () => stopServer());

    const sse = (server: LocalServer) => {
      const headers = { Authorization: `Bearer ${server.token}` };
      return new SSEClientTransport(new URL(`${server.url}/sse`), {
        requestInit: { headers },
        eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
      });
    };
    const versions: Array<[string, string, (server: LocalServer) => Transport]> = [
      ['2025-06-18', 'Streamable HTTP', streamable],
      ['2025-03-26', 'Streamable HTTP', streamable],
      ['2025-03-26', 'stdio', stdio],
      ['2024-11-05', 'HTTP+SSE', sse],
      ['2024-11-05', 'stdio', stdio],
    ];
    for (const [version, over, transport] of versions) {
      it(`${version} over ${over}: tools, a run, a resource`, async () => {
        const client = new Client({ name: 'perennial-tests', version: '1.0.0' }, { supportedProtocolVersions: [version] });
        await client.connect(transport(server));
        try {
          assert.equal(client.getNegotiatedProtocolVersion(), version);
          assert.equal((await client.listTools()).tools.length, TOOL_NAMES.length);
          const replId = ((await call(client, 'create-python-repl', {})).structuredContent as { replId: string }).replId;
          assert.equal(textOf(await call(client, 'run-python-in-repl', { replId, pythonCode: '40 + 2' })), 'Out: 42');
          const history = (await client.readResource({ uri: `perennial://machines/${replId}/history` })).contents[0] as { text: string };
          assert.equal((JSON.parse(history.text) as Array<{ code: string }>)[0]!.code, '40 + 2');
        } finally {
          await client.close();
        }
      });
    }
  });

  describe('the inline image cap, as each client sets it', () => {
    let server: LocalServer;
    let stopServer: () => Promise<void>;
    before(async () => ({ server, stop: stopServer } = await startPythonServer()));
    after(async () => stopServer());

    /** How many of three figures come inline, and the note, through `transport` opened in `mode`. */
    async function inlineOfThree(transport: Transport, mode: VersionNegotiationMode = 'auto'): Promise<[number, string]> {
      const client = new Client({ name: 'perennial-tests', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(transport);
      try {
        const replId = ((await call(client, 'create-python-repl', {})).structuredContent as { replId: string }).replId;
        const plotted = await call(client, 'run-python-in-repl', { replId, pythonCode: PLOT_THREE });
        assert.equal(plotted.content.filter((c) => c.type === 'resource_link').length, 3, 'a link for every figure');
        return [plotted.content.filter((c) => c.type === 'image').length, textOf(plotted)];
      } finally {
        await client.close();
      }
    }
    const http = (query: string) =>
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp${query}`), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } });

    it('on the HTTP endpoint by its query, in both eras and on legacy SSE', async () => {
      assert.equal((await inlineOfThree(http('?inlineImages=2')))[0], 2);
      const [none, note] = await inlineOfThree(http('?inlineImages=0'), 'legacy');
      assert.equal(none, 0);
      assert.match(
        note,
        /^\[perennial\] 3 figures: inline images are off; read them as resources: perennial:\/\/machines\/[\w-]+\/figures\/0\/1\.png, \S+\/2\.png, \S+\/3\.png$/,
      );
      const headers = { Authorization: `Bearer ${server.token}` };
      const sse = new SSEClientTransport(new URL(`${server.url}/sse?inlineImages=3`), {
        requestInit: { headers },
        eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
      });
      assert.equal((await inlineOfThree(sse, 'legacy'))[0], 3);
      for (const bad of ['lots', '-1', '101', '1.5']) {
        const response = await fetch(`${server.url}/mcp?inlineImages=${bad}`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: '{}',
        });
        assert.equal(response.status, 400, bad);
        assert.match(((await response.json()) as { error: { message: string } }).error.message, /^inlineImages: expected a whole number from 0 to 100, got "/);
      }
    });

    it('on `perennial mcp` by a flag, which refuses what it cannot take', async () => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [CLI, '--data-dir', server.manager.dataDir, 'mcp', '--inline-images', '3'],
        env: { ...process.env } as Record<string, string>,
        stderr: 'pipe',
      });
      assert.equal((await inlineOfThree(transport))[0], 3);
      const refused = spawnSync(process.execPath, [CLI, '--data-dir', server.manager.dataDir, 'mcp', '--inline-images', 'all'], { encoding: 'utf8' });
      assert.notEqual(refused.status, 0);
      assert.match(refused.stderr, /--inline-images <n>' argument 'all' is invalid\. inlineImages: expected a whole number from 0 to 100/);
    });
  });

  describe('the machines a connection creates, whoever started the server', () => {
    let server: LocalServer;
    let stopServer: () => Promise<void>;
    before(async () => ({ server, stop: stopServer } = await startPythonServer()));
    after(async () => stopServer());
    const { dir: otherPrefix, python: other } = otherPython();
    const madeByOther = 'Out: True';

    /** The engine of a machine made by create-python-repl with `args`, or (python engine) whether it sees the other interpreter's packages. */
    async function created(client: Client, args: Record<string, unknown> = {}): Promise<string> {
      const replId = ((await call(client, 'create-python-repl', args)).structuredContent as { replId: string }).replId;
      const { engine } = ((await call(client, 'describe-python-repl', { replId })).structuredContent as { machine: { engine: string } }).machine;
      if (engine !== 'python') return engine;
      const sees = `import sys; any(p.startswith(${JSON.stringify(otherPrefix)}) for p in sys.path)`;
      return textOf(await call(client, 'run-python-in-repl', { replId, pythonCode: sees }));
    }
    async function connected(transport: Transport): Promise<Client> {
      const client = new Client({ name: 'perennial-tests', version: '1.0.0' });
      await client.connect(transport);
      return client;
    }
    const http = (query: string) =>
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp?${query}`), { requestInit: { headers: { Authorization: `Bearer ${server.token}` } } });

    it("on the HTTP endpoint, by its query (as VS Code sends its settings and the Python extension's interpreter)", async () => {
      const client = await connected(http(new URLSearchParams({ python: other, engine: 'python' }).toString()));
      try {
        assert.equal(await created(client), madeByOther);
        assert.equal(await created(client, { engine: 'python' }), madeByOther);
      } finally {
        await client.close();
      }
      const plain = await connected(http(''));
      try {
        assert.notEqual(await created(plain), madeByOther, "the server's own interpreter otherwise");
      } finally {
        await plain.close();
      }
      const headers = { Authorization: `Bearer ${server.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      for (const [query, problem] of [
        ['engine=ruby', /^engine: Invalid option: expected one of "sandbox"\|"python"/],
        ['network=maybe', /^network: Invalid option/],
      ] as const) {
        const response = await fetch(`${server.url}/mcp?${query}`, { method: 'POST', headers, body: '{}' });
        assert.equal(response.status, 400, query);
        assert.match(((await response.json()) as { error: { message: string } }).error.message, problem);
      }
      const relative = await connected(http('engine=sandbox&workspace=some/folder'));
      try {
        const refused = await call(relative, 'create-python-repl', {});
        assert.equal(refused.isError, true);
        assert.match(textOf(refused), /The workspace folder must be an absolute path, not some\/folder/);
      } finally {
        await relative.close();
      }
    });

    it('by the name a call gives; a mistyped name gets the nearest and the tool that lists them', async () => {
      const client = await connected(http(''));
      try {
        const made = await call(client, 'create-python-repl', { name: 'sales-analysis' });
        assert.deepEqual(made.structuredContent, { replId: 'sales-analysis' });
        const again = await call(client, 'create-python-repl', { name: 'sales-analysis' });
        assert.equal(again.isError, true);
        assert.match(textOf(again), /A machine named sales-analysis already exists/);
        const typo = await call(client, 'run-python-in-repl', { replId: 'sales-analysys', pythonCode: '1' });
        assert.equal(typo.isError, true);
        assert.match(
          textOf(typo),
          /Machine sales-analysys does not exist \(it may have been deleted\)\. Did you mean sales-analysis\? \(list-python-repls lists every REPL\)/,
        );
      } finally {
        await client.close();
      }
    });

    it('on `perennial mcp`, by PERENNIAL_PYTHON and its flags, though the server was started with another interpreter', async () => {
      const stdio = (args: string[], env: Record<string, string> = {}) =>
        new StdioClientTransport({
          command: process.execPath,
          args: [CLI, '--data-dir', server.manager.dataDir, 'mcp', ...args],
          env: { ...(process.env as Record<string, string>), PERENNIAL_PYTHON: '', ...env },
          stderr: 'pipe',
        });
      const fromEnv = await connected(stdio([], { PERENNIAL_PYTHON: other }));
      try {
        assert.equal(await created(fromEnv), madeByOther);
      } finally {
        await fromEnv.close();
      }
      const fromFlags = await connected(stdio(['--engine', 'sandbox', '--python', other]));
      try {
        assert.equal(await created(fromFlags), 'sandbox');
        assert.equal(await created(fromFlags, { engine: 'python' }), madeByOther);
      } finally {
        await fromFlags.close();
      }
    });
  });

  describe("a cell's input() asks the person through the client's form, where the call can wait for it", () => {
    let server: LocalServer;
    let stopServer: () => Promise<void>;
    before(async () => ({ server, stop: stopServer } = await startPythonServer()));
    after(() => stopServer());
    const code = 'who = input("Name? ")\nwho';

    for (const [name, transport] of [
      ['stdio', stdio],
      ['HTTP', streamable],
    ] as const) {
      it(`over ${name}, 2025-11-25: the prompt is the form's message, the answer the cell's; a password is never asked`, async () => {
        const questions: string[] = [];
        const client = new Client(
          { name: 'perennial-tests', version: '1.0.0' },
          { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'legacy' } },
        );
        client.setRequestHandler('elicitation/create', async (request) => {
          questions.push((request.params as { message: string }).message);
          return { action: 'accept', content: { answer: 'Ada' } };
        });
        await client.connect(transport(server));
        try {
          const replId = ((await call(client, 'create-python-repl', {})).structuredContent as { replId: string }).replId;
          const answered = await call(client, 'run-python-in-repl', { replId, pythonCode: code });
          assert.equal((answered.structuredContent as { value: string }).value, "'Ada'", textOf(answered));
          assert.match(textOf(answered), /^Name\? Ada$/m);
          assert.deepEqual(questions, ['Name?']);
          const secret = await call(client, 'run-python-in-repl', { replId, pythonCode: 'import getpass\ngetpass.getpass()' });
          assert.match(textOf(secret), /EOFError: input\(\) has no answer: an MCP client may not be asked for a password/);
          assert.equal(questions.length, 1);
        } finally {
          await client.close();
        }
      });
    }

    it('a client that cannot show a form, or a 2026-07-28 call, gets an EOFError that says so', async () => {
      for (const [options, reason] of [
        [{ versionNegotiation: { mode: 'legacy' } }, 'this MCP client cannot show a form to ask the person'],
        [
          { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
          'an MCP 2026-07-28 tool call cannot wait for an answer in the middle of a cell',
        ],
      ] as const) {
        const client = new Client({ name: 'perennial-tests', version: '1.0.0' }, options);
        await client.connect(streamable(server));
        try {
          const replId = ((await call(client, 'create-python-repl', {})).structuredContent as { replId: string }).replId;
          assert.match(
            textOf(await call(client, 'run-python-in-repl', { replId, pythonCode: code })),
            new RegExp(`EOFError: input\\(\\) has no answer: ${reason}`),
          );
        } finally {
          await client.close();
        }
      }
    });
  });

  it('refuses MCP requests without the token', async () => {
    const { dir, cleanup } = await tempDataDir();
    const server = await LocalServer.start({ dataDir: dir, defaultEngine: 'python' });
    try {
      const response = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: '{}',
      });
      assert.equal(response.status, 401);
    } finally {
      await server.close();
      await cleanup();
    }
  });
});
