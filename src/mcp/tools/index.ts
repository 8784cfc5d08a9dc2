import type { McpServer } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { ForeverVMError } from '../../shared/forevervm-error.ts';
import type { PerennialClient } from '../../shared/perennial-client.ts';
import type { NewMachineOptions } from '../../shared/requests.ts';
import { cellQuestions } from '../cell-questions.ts';
import { ICONS } from '../icons.ts';
import * as checkpoints from './checkpoints.ts';
import * as files from './files.ts';
import * as machines from './machines.ts';
import * as running from './running.ts';
import * as state from './state.ts';
import type { ToolDefinition } from './tool.ts';
import * as view from './view.ts';

export type { RunOutput } from './running.ts';
export type { FollowOutput, ReplDescription } from './view.ts';

/** Every tool, in the order a client lists them. */
export const TOOLS = [
  machines.create,
  running.runPython,
  running.runFile,
  machines.list,
  machines.remove,
  running.interrupt,
  state.listVariables,
  view.describe,
  view.follow,
  state.getVariable,
  state.reset,
  state.inspect,
  checkpoints.fork,
  checkpoints.checkpoint,
  checkpoints.listCheckpoints,
  checkpoints.rollback,
  files.installPackages,
  state.history,
  files.listFiles,
  files.readFile,
  files.writeFile,
];

/** Registers every tool on `server`, each working on the machines `client` reaches; `progressHeartbeatMs` is the longest silence in a call's progress. */
export function registerTools(
  server: McpServer,
  client: PerennialClient,
  { inlineImages, progressHeartbeatMs, machineDefaults }: { inlineImages: number; progressHeartbeatMs: number; machineDefaults: NewMachineOptions },
): void {
  for (const definition of TOOLS as Array<ToolDefinition<z.ZodObject>>) {
    server.registerTool(
      definition.name,
      {
        title: definition.title,
        description: definition.description,
        inputSchema: definition.inputSchema,
        ...(definition.outputSchema ? { outputSchema: definition.outputSchema } : {}),
        annotations: definition.annotations,
        icons: ICONS,
        ...(definition._meta ? { _meta: definition._meta } : {}),
      },
      async (args: Record<string, unknown>, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        const started = Date.now();
        let step = 0;
        let heartbeat: NodeJS.Timeout | undefined;
        // Clients drop calls that show no progress for a while: silence is broken with the elapsed time.
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
          return await definition.handler(args as never, {
            client,
            signal: ctx.mcpReq.signal,
            progress,
            inlineImages,
            machineDefaults,
            ask: cellQuestions(server, ctx),
          });
        } catch (error) {
          if (error instanceof ForeverVMError && error.code === 'MachineNotFound')
            throw new Error(`${error.message} (list-python-repls lists every REPL)`, { cause: error });
          throw error;
        } finally {
          clearTimeout(heartbeat);
        }
      },
    );
  }
}
