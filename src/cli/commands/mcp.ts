import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer } from '../../mcp/mcp-server.ts';
import type { CliContext } from '../context.ts';

/**
 * `perennial mcp`: the MCP server on stdin/stdout, for MCP clients that start their servers
 * (Claude Desktop, Cursor...). Its tools reach the local server (started when needed) or hosted
 * ForeverVM. Nothing else may be written to stdout: it is the protocol.
 */
export async function mcpCommand(ctx: CliContext): Promise<void> {
  const client = await ctx.openClient();
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await createMcpServer(client).connect(transport);
  await closed;
  await client.close();
}
