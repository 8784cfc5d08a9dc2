import { ProtocolError, ProtocolErrorCode, type McpServer, type ServerContext } from '@modelcontextprotocol/server';
import { TASKS_EXTENSION_ID_V2, type DetailedTaskV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import type { TaskV1 } from '@modelcontextprotocol/ext-tasks/core/v1';
import { z } from 'zod';
import { isModernCall } from '../client-capabilities.ts';
import type { McpTasks, TaskView } from './mcp-tasks.ts';

/** A tool's result as the extension's schema types it. */
type ToolResultJson = Extract<DetailedTaskV2, { status: 'completed' }>['result'];

/** How often a client is asked to poll a task. */
const POLL_INTERVAL_MS = 1000;

/**
 * A task's results are kept as long as its machine and the machine's history: no time limit
 * (`ttl` null). An install's, which is no instruction, only while the server that ran it runs.
 */
const TTL = null;

/** A task for the Tasks extension of 2026-07-28 (`tasks/get`, and the answer that creates it). */
export function detailedTask(view: TaskView): DetailedTaskV2 {
  const base = {
    taskId: view.taskId,
    statusMessage: view.statusMessage,
    createdAt: view.createdAt,
    lastUpdatedAt: view.lastUpdatedAt,
    ttlMs: TTL,
    pollIntervalMs: POLL_INTERVAL_MS,
  };
  // The result as the call would have answered it on the wire of 2026-07-28.
  if (view.status === 'completed') return { ...base, status: 'completed', result: { ...view.result!, resultType: 'complete' } as unknown as ToolResultJson };
  if (view.status === 'failed') return { ...base, status: 'failed', error: view.error! };
  return { ...base, status: view.status };
}

/** A task for the experimental tasks of 2025-11-25. */
export function legacyTask(view: TaskView): TaskV1 {
  return {
    taskId: view.taskId,
    status: view.status,
    statusMessage: view.statusMessage,
    createdAt: view.createdAt,
    lastUpdatedAt: view.lastUpdatedAt,
    ttl: TTL,
    pollInterval: POLL_INTERVAL_MS,
  };
}

const TaskRequest = z.object({ taskId: z.string() });

/**
 * The Tasks methods on `server`, for both generations: the extension of 2026-07-28
 * (`tasks/get` with the result inline, `tasks/cancel`, `tasks/update`) and the experimental tasks
 * of 2025-11-25 (`tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`, and status
 * notifications on the session for the tasks it made or asked about). Which one a request gets
 * follows the era it was made in. Answers the session, which the tools tell of the tasks they make.
 */
export function registerTaskMethods(server: McpServer, tasks: McpTasks, inlineImages: number): LegacyTaskSession {
  server.server.registerCapabilities({
    tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    extensions: { [TASKS_EXTENSION_ID_V2]: {} },
  });
  const session = legacySession(server, tasks, inlineImages);
  const view = (taskId: string) => tasks.view(taskId, inlineImages);

  server.server.setRequestHandler('tasks/get', { params: TaskRequest }, async ({ taskId }, ctx) => {
    if (isModernCall(ctx)) return detailedTask(await view(taskId));
    session.watch(taskId);
    return legacyTask(await view(taskId));
  });
  server.server.setRequestHandler('tasks/cancel', { params: TaskRequest }, async ({ taskId }, ctx) => {
    await tasks.cancel(taskId);
    if (isModernCall(ctx)) return {};
    session.watch(taskId);
    return legacyTask(await view(taskId));
  });
  server.server.setRequestHandler('tasks/update', { params: TaskRequest.loose() }, async ({ taskId }, ctx) => {
    modernOnly(ctx, 'tasks/update');
    // No task of this server asks for input (a cell's input() gets an EOFError): nothing is outstanding.
    await view(taskId);
    return {};
  });
  server.server.setRequestHandler('tasks/result', { params: TaskRequest }, async ({ taskId }, ctx) => {
    legacyOnly(ctx, 'tasks/result');
    session.watch(taskId);
    const settled = await tasks.settled(taskId, inlineImages, ctx.mcpReq.signal);
    const related = { 'io.modelcontextprotocol/related-task': { taskId } };
    if (settled.status === 'failed') throw new ProtocolError(settled.error!.code, settled.error!.message);
    if (settled.status === 'cancelled') throw new ProtocolError(ProtocolErrorCode.InvalidRequest, `Task ${taskId} was cancelled: it has no result`);
    return { ...settled.result!, _meta: { ...settled.result!._meta, ...related } };
  });
  server.server.setRequestHandler('tasks/list', { params: z.object({ cursor: z.string().optional() }).optional() }, (_params, ctx) => {
    legacyOnly(ctx, 'tasks/list');
    return { tasks: session.list().map(legacyTask) };
  });
  return session;
}

/** What one 2025-era session knows of tasks: the ones it made or asked about, told of as they change. */
export interface LegacyTaskSession {
  watch(taskId: string): void;
  list(): TaskView[];
}

function legacySession(server: McpServer, tasks: McpTasks, inlineImages: number): LegacyTaskSession {
  const watched = new Set<string>();
  let unlisten: (() => void) | undefined;
  const tell = async (taskId: string) => {
    if (!watched.has(taskId)) return;
    const params = legacyTask(await tasks.view(taskId, inlineImages));
    await server.server.notification({ method: 'notifications/tasks/status', params }).catch(() => {});
  };
  return {
    watch(taskId) {
      watched.add(taskId);
      if (unlisten) return;
      unlisten = tasks.onChange((id) => void tell(id).catch(() => {}));
      const closed = server.server.onclose;
      server.server.onclose = () => {
        unlisten?.();
        closed?.();
      };
    },
    list: () => tasks.list(inlineImages).filter((view) => watched.has(view.taskId)),
  };
}

function modernOnly(ctx: ServerContext, method: string): void {
  if (!isModernCall(ctx)) throw new ProtocolError(ProtocolErrorCode.MethodNotFound, `${method} is a method of the Tasks extension (MCP 2026-07-28)`);
}

function legacyOnly(ctx: ServerContext, method: string): void {
  if (isModernCall(ctx))
    throw new ProtocolError(ProtocolErrorCode.MethodNotFound, `${method} is not a method of the Tasks extension: tasks/get carries the result`);
}
