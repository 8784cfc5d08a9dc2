import { completable, type GetPromptResult, type McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { PerennialClient } from '../shared/perennial-client.ts';
import { viewResult } from '../shared/result-format.ts';
import type { HistoryEntry, VariableSummary } from '../shared/types.ts';
import { completeMachineName, completeMachinePath } from './completions.ts';

/** How many of a machine's last instructions a prompt shows. */
const RECENT_INSTRUCTIONS = 10;
/** Longest code or traceback a prompt quotes, in characters. */
const QUOTE_CHARS = 4000;

const ask = (text: string): GetPromptResult => ({ messages: [{ role: 'user', content: { type: 'text', text } }] });

const quote = (text: string) =>
  '```\n' + (text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS)}\n… (${text.length - QUOTE_CHARS} more characters)` : text) + '\n```';

function variablesText(variables: VariableSummary[]): string {
  if (!variables.length) return 'It has no variables yet.';
  return `Its variables:\n${variables.map((v) => `- \`${v.name}\` (${v.type}${v.shape ? `, shape ${v.shape.join('×')}` : v.size !== undefined ? `, ${v.size} items` : ''}): ${v.repr}`).join('\n')}`;
}

function entryText(entry: HistoryEntry): string {
  const view = entry.result ? viewResult(entry.result) : null;
  const outcome = !view
    ? '(no result recorded)'
    : view.error !== null
      ? `Error:\n${quote(view.error)}`
      : view.value !== null
        ? `Value: ${view.value}`
        : '(no value)';
  return `[${entry.seq}]\n${quote(entry.code)}\n${outcome}`;
}

/** The prompts' arguments, with completions over `client`'s machines. */
function makeArgumentSchemas(client: PerennialClient) {
  const replId = completable(z.string().describe('The REPL (machine) name'), completeMachineName(client));
  const path = completable(
    z.string().describe('The file, inside the REPL (the workspace is /workspace in a sandbox REPL that mounts it)'),
    completeMachinePath(client),
  );
  return { machineArgs: z.object({ replId }), fileArgs: z.object({ replId, path }) };
}

const schemasByClient = new WeakMap<PerennialClient, ReturnType<typeof makeArgumentSchemas>>();

/**
 * Made once per client: a 2026-07-28 endpoint builds a server for every request, and building
 * these schemas each time was a third of that.
 */
function argumentSchemas(client: PerennialClient): ReturnType<typeof makeArgumentSchemas> {
  let schemas = schemasByClient.get(client);
  if (!schemas) schemasByClient.set(client, (schemas = makeArgumentSchemas(client)));
  return schemas;
}

/**
 * Prompts that make an agent effective with a REPL that keeps its state: each one sets the agent
 * up to reuse what the machine already holds instead of starting over.
 */
export function registerPrompts(server: McpServer, client: PerennialClient): void {
  const { machineArgs, fileArgs } = argumentSchemas(client);
  const machineState = async (name: string) => {
    const [variables, history] = await Promise.all([client.variables(name), client.history(name, RECENT_INSTRUCTIONS)]);
    return { variables, history };
  };

  server.registerPrompt(
    'explore-data-file',
    {
      title: 'Explore a data file in a REPL',
      description:
        'Load a data file (CSV, JSON, Parquet, Excel...) into a persistent REPL once, and summarise it: shape, columns, types, missing values, sample rows.',
      argsSchema: fileArgs,
    },
    ({ replId: name, path }) =>
      ask(
        [
          `Explore the data file \`${path}\` in the persistent Python REPL \`${name}\` (Perennial).`,
          '1. Load it once with run-python-in-repl, into a variable with a meaningful name: with pandas if the REPL has it (install-python-packages can add it), else with the csv or json module.',
          '2. Report its shape, columns and their types, missing values, and a few rows; plot a distribution or two if that helps (figures come back as images).',
          '3. Suggest the next questions worth asking of it.',
          'The REPL keeps its variables between calls and across restarts: later steps reuse the loaded data instead of reading the file again.',
        ].join('\n'),
      ),
  );

  server.registerPrompt(
    'resume-repl',
    {
      title: 'Pick up where a REPL left off',
      description: 'Continue work in a persistent REPL from its variables and its last instructions, without recomputing what it already holds.',
      argsSchema: machineArgs,
    },
    async ({ replId: name }) => {
      const { variables, history } = await machineState(name);
      return ask(
        [
          `You are continuing work in the persistent Python REPL \`${name}\` (Perennial). Everything below is still in memory: reuse it, and do not recompute or reload what exists.`,
          variablesText(variables),
          history.length ? `Its last ${history.length} instructions, oldest first:\n\n${history.map(entryText).join('\n\n')}` : 'It has run nothing yet.',
          'Say in a sentence or two what this work is about and where it stands, then continue it with run-python-in-repl.',
        ].join('\n\n'),
      );
    },
  );

  server.registerPrompt(
    'debug-last-error',
    {
      title: "Debug a REPL's last error",
      description:
        'Find the cause of the last instruction that failed in a REPL and fix it, rerunning only what is needed: the state before the error is still there.',
      argsSchema: machineArgs,
    },
    async ({ replId: name }) => {
      const { variables, history } = await machineState(name);
      const failed = history.findLast((entry) => entry.result && viewResult(entry.result).error !== null);
      if (!failed) return ask(`None of the last ${RECENT_INSTRUCTIONS} instructions of the REPL \`${name}\` failed; there is no error to debug.`);
      return ask(
        [
          `This instruction failed in the persistent Python REPL \`${name}\` (Perennial):`,
          entryText(failed),
          variablesText(variables),
          'Find the cause: inspect the variables involved (get-repl-variable, inspect-repl-object, or a short run-python-in-repl). Then fix it and rerun only what is needed; what ran before the error is still in memory.',
        ].join('\n\n'),
      );
    },
  );
}
