import { fileURLToPath } from 'node:url';
import { StreamableHTTPClientTransport, type CallToolResult, type Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { LocalServer } from '../../src/server/local-server.ts';
import { TEST_PYTHON, tempDataDir } from './machines.ts';

/** The built CLI; `npm test` builds it first. */
export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
/** The longest silence in a long call's progress, on every server these helpers start (10 s unless set). */
export const HEARTBEAT_MS = 2000;

/** A tool result's text blocks, joined. */
export const textOf = (result: CallToolResult) =>
  result.content
    .filter((c) => c.type === 'text')
    .map((c) => (c as { text: string }).text)
    .join('\n');

/** Calls tool `name` with `args`. */
export async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return client.callTool({ name, arguments: args });
}

/** A local server on a fresh data dir, whose python-engine machines use `python`. */
export async function startPythonServer(python = TEST_PYTHON): Promise<{ server: LocalServer; stop(): Promise<void> }> {
  const data = await tempDataDir();
  process.env.PERENNIAL_PYTHON = python;
  const server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'python', heartbeatMs: HEARTBEAT_MS });
  const stop = async () => {
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await data.cleanup();
  };
  return { server, stop };
}

/** `perennial mcp` on the server's data dir, as a client starts it. */
export const stdioTransport = (server: LocalServer) =>
  new StdioClientTransport({
    command: process.execPath,
    args: [CLI, '--data-dir', server.manager.dataDir, 'mcp', '--heartbeat', String(HEARTBEAT_MS / 1000)],
    env: { ...process.env } as Record<string, string>,
    stderr: 'pipe',
  });

/** The server's `/mcp` over Streamable HTTP, with its token. */
export const streamableTransport = ({ url, token }: { url: string; token: string }) =>
  new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
