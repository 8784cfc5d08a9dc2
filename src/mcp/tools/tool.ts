import type { CallToolResult } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import type { PerennialClient } from '../../shared/perennial-client.ts';
import { MachineName, type NewMachineOptions } from '../../shared/requests.ts';
import type { InputAnswerer } from '../../shared/types.ts';
import type { McpTasks } from '../tasks/mcp-tasks.ts';

/** What a tool's handler gets besides its arguments. */
export interface ToolContext {
  /** Where the machines are: the local server's own (in process), or behind a server. */
  client: PerennialClient;
  /** Aborted when the call ends unanswered: the client cancelled it, stopped waiting or went away. */
  signal: AbortSignal;
  /** Aborted when the client asks for the call's work to stop (`stopsWork`): a run's code is then interrupted. */
  stop: AbortSignal;
  /** Sends a progress notification when the caller asked for progress; a no-op otherwise. */
  progress(message: string): Promise<void>;
  /** How many figures a result shows as images; the rest only as links. */
  inlineImages: number;
  /** What a new machine is made with unless the call says otherwise (`McpOptions.machineDefaults`). */
  machineDefaults: NewMachineOptions;
  /** Puts a running cell's `input()` to the person (see `cellQuestions`). */
  ask: InputAnswerer;
  /** How long a call that runs code may take before it answers that the code still runs (`McpOptions.answerWithinMs`). */
  answerWithinMs: number;
  /** The instructions and other work this process follows (`mcp/tasks/`), where a call comes back to a run. */
  tasks: McpTasks;
}

export interface ToolDefinition<In extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  inputSchema: In;
  outputSchema?: z.ZodObject;
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /** The MCP Apps view it links (`MACHINE_VIEW_META`), or that only the view calls it (`VIEW_ONLY_META`). */
  _meta?: Record<string, unknown>;
  handler(args: z.infer<In>, context: ToolContext): Promise<CallToolResult>;
  /**
   * A tool that runs code: the instruction it is. Called by a client that takes MCP tasks, it may
   * run as one, kept as long as the machine's history (`mcp/tasks/`).
   */
  instruction?(args: z.infer<In>): Instruction;
  /** Long work that is not an instruction (an install): it may run as a task this process keeps. */
  longRunning?: boolean;
}

/** Code a tool runs on a machine. */
export interface Instruction {
  machine: string;
  code: string;
  timeoutSeconds?: number;
}

/** Keeps each tool's argument types tied to its schema. */
export function tool<In extends z.ZodObject>(definition: ToolDefinition<In>): ToolDefinition<In> {
  return definition;
}

export const replId = MachineName.describe('The machine name returned by create-python-repl');

export const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
export const json = (value: unknown): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
  structuredContent: value as Record<string, unknown>,
});

/**
 * When a call must answer: `ms` from now (never, for 0), not counting the time a person takes to
 * answer the code's questions (`asking`): a deadline that passes meanwhile is kept until they end.
 */
export function answerDeadline(ms: number) {
  let reached!: () => void;
  const passed = new Promise<undefined>((resolve) => (reached = () => resolve(undefined)));
  let open = 0;
  let late = false;
  const timer = ms > 0 ? setTimeout(() => (open ? (late = true) : reached()), ms) : undefined;
  return {
    passed,
    async asking<T>(question: () => Promise<T>): Promise<T> {
      open += 1;
      try {
        return await question();
      } finally {
        open -= 1;
        if (!open && late) reached();
      }
    },
    clear: () => clearTimeout(timer),
  };
}
