import { serveStdio, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { DEFAULT_INLINE_IMAGES } from '../../shared/requests.ts';
import { TaskListenStdioTransport } from '../../mcp/tasks/task-listen-stdio.ts';
import { createMcpServer } from '../../mcp/mcp-server.ts';
import { ResourceListChanges } from '../../mcp/resource-list-changes.ts';
import { McpTasks } from '../../mcp/tasks/mcp-tasks.ts';
import { newMachineOptions, type CliContext, type MachineFlags } from '../context.ts';

export interface McpCommandOptions extends MachineFlags {
  inlineImages?: number;
  heartbeat?: number;
  taskAfter?: number;
  answerWithin?: number;
}

/**
 * `perennial mcp`: the MCP server on stdin/stdout, for MCP clients that start their servers
 * (Claude Desktop, Cursor...), in whichever protocol era the client opens with. Its tools reach
 * the local server (started when needed) or hosted ForeverVM, and create machines as its flags
 * and environment say, whoever started the server. Nothing else may be written to
 * stdout: it is the protocol.
 */
export async function mcpCommand(ctx: CliContext, { inlineImages, heartbeat, taskAfter, answerWithin, ...flags }: McpCommandOptions): Promise<void> {
  const options = {
    inlineImages,
    progressHeartbeatMs: heartbeat === undefined ? undefined : heartbeat * 1000,
    taskAfterMs: taskAfter === undefined ? undefined : taskAfter * 1000,
    answerWithinMs: answerWithin === undefined ? undefined : answerWithin * 1000,
    machineDefaults: newMachineOptions(flags),
  };
  const client = await ctx.openClient();
  const closed = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
  });
  const changes = new ResourceListChanges(client);
  // Task ids are sealed with the backend's token: for the local server, its data dir's, as the
  // server's own /mcp seals them, so that either reads the other's.
  const tasks = new McpTasks(client, client.token);
  const wire = new TaskListenStdioTransport(new StdioServerTransport(), {
    tasks,
    inlineImages: inlineImages ?? DEFAULT_INLINE_IMAGES,
    onResourceListChange: (listener) => changes.listen(listener),
  });
  const served = serveStdio(() => changes.track(createMcpServer(client, tasks, options)), {
    transport: wire,
    onerror: (error) => process.stderr.write(`perennial mcp: ${error.message}\n`),
  });
  await closed;
  changes.close();
  tasks.close();
  await served.close();
  await client.close();
}
