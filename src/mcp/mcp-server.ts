import { McpServer } from '@modelcontextprotocol/server';
import type { PerennialClient } from '../shared/perennial-client.ts';
import { DEFAULT_INLINE_IMAGES, type NewMachineOptions } from '../shared/requests.ts';
import { VERSION } from '../shared/version.ts';
import { ICONS } from './icons.ts';
import { registerMachineView } from './machine-view.ts';
import { registerPrompts } from './prompts.ts';
import { registerResources } from './resources.ts';
import type { McpTasks } from './tasks/mcp-tasks.ts';
import { registerTaskMethods } from './tasks/task-methods.ts';
import { registerTools } from './tools/tool-serving.ts';

/** What an agent is told about the tools, once, at initialization (or discovery). */
export const INSTRUCTIONS = [
  'Perennial gives you persistent Python REPLs: create one with create-python-repl and keep its replId.',
  'run-python-in-repl runs code there; variables, imports, functions and files stay for later calls, even after hours.',
  'The last expression is returned as its repr; print for more output. Figures come back as images (a few per result) and as perennial:// resources to read.',
  'Long work needs nothing special: code that has not finished when a call must answer runs on, and wait-for-repl-instruction gives its result later; interrupt-python-repl stops runaway code without losing state.',
].join('\n');

/** What a client can choose for its connection (`perennial mcp` flags, the HTTP endpoint's query). */
export interface McpOptions {
  /** Figures a result shows as images; the rest only as resource links. */
  inlineImages?: number;
  /** Longest silence in the progress of a call that asked for progress. Default 10 s. */
  progressHeartbeatMs?: number;
  /** How long a 2026-07-28 call that can be a task runs before it becomes one; quicker work is answered at once. Default 1 s. */
  taskAfterMs?: number;
  /**
   * How long a call that runs code, and is not a task, may take before it answers that the code
   * still runs (which goes on): under the time MCP clients give a call (60 s for most). Default 40 s;
   * 0: a call waits for the end.
   */
  answerWithinMs?: number;
  /**
   * What create-python-repl makes unless the call says otherwise: the engine, the python engine's
   * interpreter, the sandbox's workspace and network. Sent with each create, so that it holds on a
   * server started earlier by someone else.
   */
  machineDefaults?: NewMachineOptions;
}

const DEFAULT_PROGRESS_HEARTBEAT_MS = 10_000;
const DEFAULT_TASK_AFTER_MS = 1000;
const DEFAULT_ANSWER_WITHIN_MS = 40_000;

/**
 * An MCP server whose tools work on the machines `client` reaches. The SDK asks for one per
 * connection (stdio, a 2025-era HTTP session, legacy SSE) or per request (2026-07-28 over HTTP):
 * nothing in it outlives that, the machines' state lives behind `client`, and the calls that run
 * as tasks in `tasks`, which the process's connections share.
 */
export function createMcpServer(
  client: PerennialClient,
  tasks: McpTasks,
  {
    inlineImages = DEFAULT_INLINE_IMAGES,
    progressHeartbeatMs = DEFAULT_PROGRESS_HEARTBEAT_MS,
    taskAfterMs = DEFAULT_TASK_AFTER_MS,
    answerWithinMs = DEFAULT_ANSWER_WITHIN_MS,
    machineDefaults = {},
  }: McpOptions = {},
): McpServer {
  const server = new McpServer(
    { name: 'perennial', title: 'Perennial Python REPLs', version: VERSION, icons: ICONS },
    { instructions: INSTRUCTIONS, capabilities: { logging: {} } },
  );
  const taskSession = registerTaskMethods(server, tasks, inlineImages);
  registerTools(server, client, { inlineImages, progressHeartbeatMs, taskAfterMs, answerWithinMs, machineDefaults, tasks, taskSession });
  registerResources(server, client);
  registerPrompts(server, client);
  registerMachineView(server);
  return server;
}
