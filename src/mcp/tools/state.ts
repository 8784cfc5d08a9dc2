import { z } from 'zod';
import { OPERATIONS } from '../../shared/operations.ts';
import { HistoryLast } from '../../shared/requests.ts';
import { historyWithFigureLinks } from '../figures.ts';
import { json, replId, tool } from './tool.ts';

export const listVariables = tool({
  name: 'list-repl-variables',
  title: 'List REPL variables',
  description: "Lists a REPL's variables: name, type, a short repr and size.",
  inputSchema: z.object({ replId }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: name }, { client }) {
    return json({ variables: await client.variables(name) });
  },
});

export const getVariable = tool({
  name: 'get-repl-variable',
  title: 'Show a REPL variable',
  description: "Shows one variable's full repr (bounded).",
  inputSchema: z.object({ replId, name: OPERATIONS.variable.request.shape.variable }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: machine, name }, { client }) {
    return json(await client.variable(machine, name));
  },
});

export const reset = tool({
  name: 'reset-python-repl',
  title: 'Reset a Python REPL',
  description:
    "Clears a REPL's namespace: every variable, function, class and import goes, as in a new REPL, while its name, files, installed packages and history stay. Modules imported from the REPL's own folder are imported afresh next time.",
  inputSchema: z.object({ replId }),
  outputSchema: z.object({ cleared: z.number().int().describe('How many names were cleared') }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async handler({ replId: name }, { client }) {
    const { cleared } = await client.reset(name);
    return {
      content: [{ type: 'text', text: `Reset ${name}: cleared ${cleared} name${cleared === 1 ? '' : 's'}; files and packages stay.` }],
      structuredContent: { cleared },
    };
  },
});

export const inspect = tool({
  name: 'inspect-repl-object',
  title: 'Inspect a REPL object',
  description:
    'Shows the type, call signature and docstring of a REPL variable or of a dotted path from one or from a builtin (df.groupby, json.dumps, str.split), without calling or running anything.',
  inputSchema: z.object({ replId, expression: OPERATIONS.inspect.request.shape.expression.describe('A variable name, or a dotted path such as df.groupby') }),
  outputSchema: z.object({ name: z.string(), type: z.string(), signature: z.string().nullable(), doc: z.string().nullable() }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: name, expression }, { client }) {
    const info = await client.inspect(name, expression);
    const lines = [
      `${info.name}: ${info.type}`,
      ...(info.signature ? [`Signature: ${info.name.split('.').at(-1)}${info.signature}`] : []),
      ...(info.doc ? ['', info.doc] : []),
    ];
    // As the schema says: the source (IPython's `??`, for a Jupyter front end) is not this tool's.
    const { name: shown, type, signature, doc } = info;
    return { content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { name: shown, type, signature, doc } };
  },
});

export const history = tool({
  name: 'get-repl-history',
  title: 'Show REPL history',
  description: 'The instructions a REPL ran, with their results (figures as perennial:// resource URIs), oldest first (the last N with `last`).',
  inputSchema: z.object({ replId, last: HistoryLast.optional() }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: name, last }, { client }) {
    return json({ history: historyWithFigureLinks(name, await client.history(name, last)) });
  },
});
