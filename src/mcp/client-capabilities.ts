import { CLIENT_CAPABILITIES_META_KEY, type ClientCapabilities, type McpServer, type ServerContext } from '@modelcontextprotocol/server';

/** A 2026-07-28 request: it carries its own version and capabilities, and nothing of it outlives its answer. */
export function isModernCall(ctx: ServerContext): boolean {
  return ctx.mcpReq.envelope !== undefined;
}

/** What the client can do, as the request declares it (2026-07-28) or its session did at initialize. */
export function clientCapabilitiesOf(server: McpServer, ctx: ServerContext): ClientCapabilities | undefined {
  const envelope = ctx.mcpReq.envelope as Record<string, ClientCapabilities | undefined> | undefined;
  return envelope ? envelope[CLIENT_CAPABILITIES_META_KEY] : server.server.getClientCapabilities();
}
