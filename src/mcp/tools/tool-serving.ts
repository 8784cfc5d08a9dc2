import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
  type ListToolsResult,
  type McpServer,
  type Result,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { ClientTaskCapabilityEnvelopeV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';
import { z } from 'zod';
import { ForeverVMError } from '../../shared/forevervm-error.ts';
import type { PerennialClient } from '../../shared/perennial-client.ts';
import { problemsOf, type NewMachineOptions } from '../../shared/requests.ts';
import { cellQuestions } from '../cell-questions.ts';
import { clientCapabilitiesOf, isModernCall } from '../client-capabilities.ts';
import { ICONS } from '../icons.ts';
import type { McpTasks, TaskView } from '../tasks/mcp-tasks.ts';
import { detailedTask, legacyTask, type LegacyTaskSession } from '../tasks/task-methods.ts';
import { TOOLS } from './index.ts';
import type { ToolContext, ToolDefinition } from './tool.ts';

/** What a connection's tools work with besides the client. */
export interface ToolOptions {
  /** How many figures a result shows as images; the rest only as links. */
  inlineImages: number;
  /** The longest silence in a call's progress. */
  progressHeartbeatMs: number;
  /** How long a 2026-07-28 call that can be a task runs before it becomes one; quicker work is answered at once. */
  taskAfterMs: number;
  /** How long a call that runs code, and is not a task, takes at most before it answers; 0: no bound. */
  answerWithinMs: number;
  machineDefaults: NewMachineOptions;
  /** Where the calls a client takes as tasks run (`mcp/tasks/`), and this session's part in them. */
  tasks: McpTasks;
  taskSession: LegacyTaskSession;
}

type AnyTool = ToolDefinition<z.ZodObject>;

const BY_NAME = new Map((TOOLS as AnyTool[]).map((definition) => [definition.name, definition]));

/** A tool's schemas as JSON Schema, converted once: the SDK makes a server per 2026-07-28 request, and the tools never change. */
const jsonSchemas = new Map<AnyTool, { input: Record<string, unknown>; output?: Record<string, unknown> }>();

function jsonSchemasOf(definition: AnyTool) {
  let schemas = jsonSchemas.get(definition);
  if (!schemas) {
    const convert = (schema: z.ZodObject, io: 'input' | 'output') => z.toJSONSchema(schema, { target: 'draft-2020-12', io });
    schemas = { input: convert(definition.inputSchema, 'input'), ...(definition.outputSchema ? { output: convert(definition.outputSchema, 'output') } : {}) };
    jsonSchemas.set(definition, schemas);
  }
  return schemas;
}

function listed(definition: AnyTool): ListToolsResult['tools'][number] {
  const { input, output } = jsonSchemasOf(definition);
  return {
    name: definition.name,
    title: definition.title,
    description: definition.description,
    inputSchema: input as ListToolsResult['tools'][number]['inputSchema'],
    ...(output ? { outputSchema: output as ListToolsResult['tools'][number]['outputSchema'] } : {}),
    annotations: definition.annotations,
    icons: ICONS,
    ...(canBeTask(definition) ? { execution: { taskSupport: 'optional' } } : {}),
    ...(definition._meta ? { _meta: definition._meta } : {}),
  };
}

function canBeTask(definition: AnyTool): boolean {
  return definition.instruction !== undefined || definition.longRunning === true;
}

const CallRequest = z
  .object({
    name: z.string(),
    arguments: z.record(z.string(), z.unknown()).optional(),
    // The experimental tasks of 2025-11-25: the client asks for a task.
    task: z.object({ ttl: z.number().optional() }).loose().optional(),
  })
  .loose();

/**
 * Serves the tools on `server`: their listing, and their calls, each working on the machines
 * `client` reaches. A call a client can take as a task (it asked for one on a 2025-11-25 session,
 * or declared the Tasks extension on a 2026-07-28 request whose work outlasts `taskAfterMs`) runs
 * as one (`mcp/tasks/`); any other is answered when it is done.
 */
export function registerTools(server: McpServer, client: PerennialClient, options: ToolOptions): void {
  server.server.registerCapabilities({ tools: {} });
  server.server.setRequestHandler('tools/list', () => ({ tools: (TOOLS as AnyTool[]).map(listed) }));
  server.server.setRequestHandler('tools/call', { params: CallRequest }, (call, ctx) => callTool(server, client, options, call, ctx));
}

/** One call: answered when it is done, or as a task (`registerTools`). */
async function callTool(
  server: McpServer,
  client: PerennialClient,
  options: ToolOptions,
  { name, arguments: given, task }: z.infer<typeof CallRequest>,
  ctx: ServerContext,
): Promise<Result> {
  const definition = BY_NAME.get(name);
  if (!definition) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Tool ${name} not found`);
  const parsed = definition.inputSchema.safeParse(given ?? {});
  if (!parsed.success) return errorResult(`Invalid arguments for ${name}: ${problemsOf(parsed.error)}`);
  const args = parsed.data;
  const modern = isModernCall(ctx);
  const takesTask = modern ? ClientTaskCapabilityEnvelopeV2Schema.safeParse(clientCapabilitiesOf(server, ctx)).success : task !== undefined;
  if (!canBeTask(definition) || !takesTask) return projected(server, definition, await callDirectly(server, client, options, definition, args, ctx));
  let taskId: string;
  try {
    taskId = await startTask(client, options, definition, args);
  } catch (error) {
    return errorResult(messageOf(error));
  }
  // A 2025-11-25 client that asks for a task must get one (the Tasks requester refuses anything else).
  if (!modern) {
    options.taskSession.watch(taskId);
    // The SDK's check of a tools/call answer wants `content` beside a task too; task clients read `task`.
    return { content: [], task: legacyTask(await options.tasks.view(taskId, options.inlineImages)) };
  }
  const view = await settledSoon(options, taskId, stopsWork(ctx));
  if (view.status === 'working') return { resultType: 'task', ...detailedTask(view) };
  if (view.error) throw new ProtocolError(view.error.code, view.error.message);
  return projected(server, definition, view.result!);
}

/**
 * A call answered when it is done: the handler gets the request's signal, its progress (with a
 * heartbeat, as clients drop calls that show none for a while) and the client's forms.
 */
async function callDirectly(
  server: McpServer,
  client: PerennialClient,
  { inlineImages, machineDefaults, progressHeartbeatMs, answerWithinMs, tasks }: ToolOptions,
  definition: AnyTool,
  args: Record<string, unknown>,
  ctx: ServerContext,
): Promise<CallToolResult> {
  const token = ctx.mcpReq._meta?.progressToken;
  const started = Date.now();
  let step = 0;
  let heartbeat: NodeJS.Timeout | undefined;
  const beat = () => {
    clearTimeout(heartbeat);
    heartbeat = setTimeout(() => void progress(`Still running (${Math.round((Date.now() - started) / 1000)} s)`), progressHeartbeatMs);
  };
  const progress = async (message: string) => {
    if (token === undefined) return;
    beat();
    step += 1;
    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: step, message } }).catch(() => {});
  };
  if (token !== undefined) beat();
  try {
    return await invoke(definition, args, {
      client,
      signal: ctx.mcpReq.signal,
      stop: stopsWork(ctx),
      progress,
      inlineImages,
      machineDefaults,
      ask: cellQuestions(server, ctx),
      answerWithinMs,
      tasks,
    });
  } finally {
    clearTimeout(heartbeat);
  }
}

/**
 * Starts a call's work as a task: its instruction, or (an install) its handler in this process,
 * whose progress goes to the task's status; a task cannot ask the person anything.
 */
function startTask(client: PerennialClient, { tasks, inlineImages, machineDefaults }: ToolOptions, definition: AnyTool, args: Record<string, unknown>) {
  if (definition.instruction) {
    const { machine, code, timeoutSeconds } = definition.instruction(args);
    return tasks.runCode(machine, code, timeoutSeconds);
  }
  return Promise.resolve(
    tasks.runWork((onLine) =>
      invoke(definition, args, {
        client,
        signal: new AbortController().signal,
        stop: new AbortController().signal,
        progress: async (message) => onLine(message),
        inlineImages,
        machineDefaults,
        // A task answers when its work ends.
        answerWithinMs: 0,
        tasks,
        ask: async () => {
          throw new Error('a tool call run as an MCP task cannot ask; put the value in the code instead');
        },
      }),
    ),
  );
}

/** The task once it ends, or as it is once it has run for `taskAfterMs`; `stop` cancels it (interrupts its code). */
async function settledSoon({ tasks, inlineImages, taskAfterMs }: ToolOptions, taskId: string, stop: AbortSignal): Promise<TaskView> {
  const cancel = () => void tasks.cancel(taskId).catch(() => {});
  stop.addEventListener('abort', cancel, { once: true });
  const waited = AbortSignal.timeout(taskAfterMs);
  try {
    return await tasks.settled(taskId, inlineImages, waited);
  } catch (error) {
    if (!waited.aborted) throw error;
    return tasks.view(taskId, inlineImages);
  } finally {
    stop.removeEventListener('abort', cancel);
  }
}

/**
 * Aborted when the call ends unanswered because the client asks for its work to stop: a cancel,
 * unless it says the client only stopped waiting (its own time limit), and a 2026-07-28 request
 * over HTTP that the client closed (the only cancel that protocol has there). A client gone (its
 * connection closed) stops nothing: the work runs on, and its result stays to be read.
 */
function stopsWork(ctx: ServerContext): AbortSignal {
  const stop = new AbortController();
  const { signal } = ctx.mcpReq;
  const closed = () => signal.reason instanceof SdkError && signal.reason.code === SdkErrorCode.ConnectionClosed;
  const asked = () => (closed() ? isModernCall(ctx) && ctx.http !== undefined : !/timed? ?out/i.test(String(signal.reason)));
  const ended = () => asked() && stop.abort(signal.reason);
  if (signal.aborted) ended();
  else signal.addEventListener('abort', ended, { once: true });
  return stop.signal;
}

/** Runs a tool's handler; what it throws is its result's error, as MCP has tools fail. */
async function invoke(definition: AnyTool, args: Record<string, unknown>, context: ToolContext): Promise<CallToolResult> {
  try {
    const result = await definition.handler(args, context);
    const structured = definition.outputSchema && !result.isError ? definition.outputSchema.safeParse(result.structuredContent) : undefined;
    if (structured && !structured.success)
      return errorResult(`${definition.name} gave a result that does not match its output schema: ${problemsOf(structured.error)}`);
    return result;
  } catch (error) {
    return errorResult(messageOf(error));
  }
}

/** A result as the connection's protocol version carries it, given the tool's advertised output schema. */
function projected(server: McpServer, definition: AnyTool, result: CallToolResult): CallToolResult {
  return server.server.projectCallToolResult(result, jsonSchemasOf(definition).output);
}

function messageOf(error: unknown): string {
  if (error instanceof ForeverVMError && error.code === 'MachineNotFound') return `${error.message} (list-python-repls lists every REPL)`;
  return error instanceof Error ? error.message : String(error);
}

function errorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}
