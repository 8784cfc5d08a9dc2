import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
} from '@modelcontextprotocol/server';
import { ClientTaskCapabilityEnvelopeV2Schema, TASKS_EXTENSION_ID_V2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { z } from 'zod';
import type { McpTasks } from './mcp-tasks.ts';
import { detailedTask } from './task-methods.ts';

/** The most tasks one subscription follows. */
const MOST_TASKS = 100;

/** MCP's codes: bad parameters, and a capability the client did not declare. */
const INVALID_PARAMS = -32602;
const MISSING_CLIENT_CAPABILITY = -32021;

/** A 2026-07-28 `subscriptions/listen` that asks for task notifications (`taskIds`), as the Tasks extension adds them. */
const TaskListen = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number()]),
  method: z.literal('subscriptions/listen'),
  params: z.object({
    _meta: z.looseObject({ [PROTOCOL_VERSION_META_KEY]: z.string(), [CLIENT_CAPABILITIES_META_KEY]: z.unknown() }),
    notifications: z.looseObject({ taskIds: z.array(z.string()), resourcesListChanged: z.boolean().optional() }),
  }),
});
export type TaskListen = z.infer<typeof TaskListen>;

/**
 * The `subscriptions/listen` request `message` is when it asks for task notifications. The SDK's
 * listen routers know only list changes: Perennial serves such a subscription itself, whole.
 */
export function taskListen(message: unknown): TaskListen | undefined {
  const parsed = TaskListen.safeParse(message);
  return parsed.success ? parsed.data : undefined;
}

/** What a subscription needs: the tasks, the figures a result shows inline, and the resource list's changes. */
export interface TaskSubscriptionSources {
  tasks: McpTasks;
  inlineImages: number;
  /** Calls `listener` whenever the resource list changes, until the returned function is called. */
  onResourceListChange(listener: () => void): () => void;
}

/** Why the request cannot be served, as its JSON-RPC error answer; undefined when it can. */
export function refusal({ id, params }: TaskListen): JSONRPCErrorResponse | undefined {
  const error = (code: number, message: string, data?: unknown) => ({ jsonrpc: '2.0' as const, id, error: { code, message, ...(data ? { data } : {}) } });
  if (!ClientTaskCapabilityEnvelopeV2Schema.safeParse(params._meta[CLIENT_CAPABILITIES_META_KEY]).success)
    return error(MISSING_CLIENT_CAPABILITY, 'Missing required client capability: task notifications need the Tasks extension', {
      requiredCapabilities: { extensions: { [TASKS_EXTENSION_ID_V2]: {} } },
    });
  if (params.notifications.taskIds.length > MOST_TASKS) return error(INVALID_PARAMS, `A subscription follows at most ${MOST_TASKS} tasks`);
  return undefined;
}

/**
 * Serves one subscription through `send`: acknowledges what it honors (the tasks asked for that
 * exist, and resource list changes when asked), sends each task's state at once and then
 * `notifications/tasks` whenever it changes (while it works, at most once a second as its output
 * does), each stamped with the subscription. Answers what ends it.
 */
export async function subscribe(
  request: TaskListen,
  { tasks, inlineImages, onResourceListChange }: TaskSubscriptionSources,
  send: (message: JSONRPCMessage) => void,
): Promise<() => void> {
  const stamp = { [SUBSCRIPTION_ID_META_KEY]: request.id };
  const known = await Promise.all(
    [...new Set(request.params.notifications.taskIds)].map((taskId) =>
      tasks.view(taskId, inlineImages).then(
        () => taskId,
        () => undefined,
      ),
    ),
  );
  const taskIds = new Set(known.filter((taskId) => taskId !== undefined));
  const resources = request.params.notifications.resourcesListChanged === true;
  send({
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { taskIds: [...taskIds], ...(resources ? { resourcesListChanged: true } : {}) }, _meta: stamp },
  });
  let open = true;
  const tell = async (taskId: string) => {
    if (!taskIds.has(taskId)) return;
    const view = await tasks.view(taskId, inlineImages);
    if (open) send({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...detailedTask(view), _meta: stamp } });
  };
  const unlisten = tasks.onChange((taskId) => void tell(taskId).catch(() => {}));
  const unlistenResources = resources
    ? onResourceListChange(() => send({ jsonrpc: '2.0', method: 'notifications/resources/list_changed', params: { _meta: stamp } }))
    : () => {};
  for (const taskId of taskIds) void tell(taskId).catch(() => {});
  return () => {
    open = false;
    unlisten();
    unlistenResources();
  };
}

/** The answer that ends a subscription the server closes (it stops): the listen request's empty result. */
export function ending(request: TaskListen): JSONRPCMessage {
  return { jsonrpc: '2.0', id: request.id, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID_META_KEY]: request.id } } };
}
