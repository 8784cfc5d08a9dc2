import { ENGINES } from '../../engines/descriptors.ts';
import { z } from 'zod';
import { EngineName, NewMachineOptions, TagFilter } from '../../shared/requests.ts';
import { MACHINE_VIEW_META } from '../machine-view.ts';
import { json, replId, text, tool } from './tool.ts';

export const create = tool({
  name: 'create-python-repl',
  title: 'Create a Python REPL',
  description:
    'Creates a persistent Python REPL (a machine) and returns its name, the replId for the other tools. Its variables, imports and files survive until it is deleted.',
  inputSchema: z.object({
    name: NewMachineOptions.shape.name.describe('A name for it, such as what it is for (letters, digits, - and _); by default a readable one is made'),
    engine: EngineName.optional().describe(
      `${ENGINES.map(({ name, summary }) => `${name} (${summary})`).join('; or ')}; the server's default when none (the first available)`,
    ),
    tags: NewMachineOptions.shape.tags.describe('Labels to find the REPL by later'),
    memoryMb: NewMachineOptions.shape.memoryMb,
  }),
  outputSchema: z.object({ replId: z.string() }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  _meta: MACHINE_VIEW_META,
  async handler(options, { client, machineDefaults }) {
    const { name, warnings } = await client.create({ ...machineDefaults, ...options });
    return { content: [{ type: 'text', text: [name, ...warnings].join('\n') }], structuredContent: { replId: name } };
  },
});

export const list = tool({
  name: 'list-python-repls',
  title: 'List Python REPLs',
  description: 'Lists the REPLs, newest first, optionally only those carrying all the given tags.',
  inputSchema: z.object({ tags: TagFilter.optional() }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ tags }, { client }) {
    return json({ repls: await client.list(tags) });
  },
});

export const remove = tool({
  name: 'delete-python-repl',
  title: 'Delete a Python REPL',
  description: 'Deletes a REPL with all its state and files.',
  inputSchema: z.object({ replId }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async handler({ replId: name }, { client }) {
    await client.delete(name);
    return text(`Deleted ${name}`);
  },
});
