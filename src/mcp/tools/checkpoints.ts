import { z } from 'zod';
import { OPERATIONS } from '../../shared/operations.ts';
import type { CheckpointInfo } from '../../shared/types.ts';
import { json, replId, tool } from './tool.ts';

const CheckpointOutput = z.object({
  id: z.string(),
  label: z.string().nullable(),
  seq: z.number().int(),
  at: z.string(),
  bytes: z.number(),
  auto: z.boolean(),
});

const checkpointName = (checkpoint: CheckpointInfo) => (checkpoint.label ? `${checkpoint.id} ("${checkpoint.label}")` : checkpoint.id);

export const fork = tool({
  name: 'fork-python-repl',
  title: 'Fork a Python REPL',
  description:
    'Makes a new REPL with the same state as this one now (variables, imports, functions, files) and returns its replId. The two are independent afterwards: try something risky in the fork and keep the original as it was.',
  inputSchema: z.object({ replId, tags: OPERATIONS.fork.request.shape.tags.describe("Labels for the fork, on top of the original's and forked_from") }),
  outputSchema: z.object({ replId: z.string() }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async handler({ replId: name, tags }, { client }) {
    const fork = await client.fork(name, tags ? { tags } : {});
    return { content: [{ type: 'text', text: fork.name }], structuredContent: { replId: fork.name } };
  },
});

export const checkpoint = tool({
  name: 'checkpoint-python-repl',
  title: 'Checkpoint a Python REPL',
  description: "Saves the REPL's state now (variables, imports, files) as a checkpoint to roll back to later, optionally labelled.",
  inputSchema: z.object({ replId, label: OPERATIONS.checkpoint.request.shape.label.describe('A name to roll back to it by, such as before-cleanup') }),
  outputSchema: z.object({ checkpoint: CheckpointOutput }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async handler({ replId: name, label }, { client }) {
    const checkpoint = await client.checkpoint(name, label);
    return {
      content: [{ type: 'text', text: `Checkpoint ${checkpointName(checkpoint)} of ${name}, before instruction ${checkpoint.seq}` }],
      structuredContent: { checkpoint },
    };
  },
});

export const listCheckpoints = tool({
  name: 'list-repl-checkpoints',
  title: 'List REPL checkpoints',
  description:
    "Lists a REPL's checkpoints, oldest first: the ones taken on request, and automatic ones taken after each change (the newest 10), so the state before a recent instruction can be restored.",
  inputSchema: z.object({ replId }),
  outputSchema: z.object({ checkpoints: z.array(CheckpointOutput) }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: name }, { client }) {
    return json({ checkpoints: await client.checkpoints(name) });
  },
});

export const rollback = tool({
  name: 'rollback-python-repl',
  title: 'Roll a Python REPL back',
  description:
    'Returns a REPL to a checkpoint (by id or label): its variables, imports and files become what they were then. What runs is interrupted first; the state it leaves is kept as an automatic checkpoint, so a rollback can be undone.',
  inputSchema: z.object({
    replId,
    checkpoint: OPERATIONS.rollback.request.shape.checkpoint.describe('A checkpoint id from list-repl-checkpoints, or a label'),
  }),
  outputSchema: z.object({
    checkpoint: CheckpointOutput,
    seq: z.number().int(),
    notes: z.array(z.string()).describe('What the rollback could not do: the state it left unsaved, a link it could not make again'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async handler({ replId: name, checkpoint }, { client }) {
    const { notes = [], ...rolled } = await client.rollback(name, checkpoint);
    const text = [`Rolled ${name} back to checkpoint ${checkpointName(rolled.checkpoint)}, taken before instruction ${rolled.checkpoint.seq}`, ...notes];
    return {
      content: [{ type: 'text', text: text.join('\n') }],
      structuredContent: { ...rolled, notes },
    };
  },
});
