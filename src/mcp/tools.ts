import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { UnsupportedByBackendError, type PerennialClient } from '../shared/perennial-client.ts';
import {
  CheckpointLabel,
  CheckpointRef,
  DottedName,
  EngineName,
  ForkBody,
  FileEncoding,
  FilePath,
  HistoryLast,
  MachineName,
  NewMachineOptions,
  Packages,
  TagFilter,
  TimeoutSeconds,
  VariableName,
} from '../shared/requests.ts';
import { resultText, viewResult } from '../shared/result-format.ts';
import {
  streamText,
  type CheckpointInfo,
  type ExecResult,
  type InputAnswerer,
  type MachineInfo,
  type OutputChunk,
  type VariableSummary,
} from '../shared/types.ts';
import { cellQuestions } from './cell-questions.ts';
import { figureContent, historyWithFigureLinks } from './figures.ts';
import { utf8Text } from './file-text.ts';
import { ICONS } from './icons.ts';
import { MACHINE_VIEW_META, VIEW_ONLY_META } from './machine-view.ts';

/** What a tool's handler gets besides its arguments. */
interface ToolContext {
  /** Where the machines are: the local server's own (in process), or behind a server. */
  client: PerennialClient;
  /** Aborted when the MCP client cancels the call. */
  signal: AbortSignal;
  /** Sends a progress notification when the caller asked for progress; a no-op otherwise. */
  progress(message: string): Promise<void>;
  /** How many figures a result shows as images; the rest only as links. */
  inlineImages: number;
  /** What a new machine is made with unless the call says otherwise (`McpOptions.machineDefaults`). */
  machineDefaults: NewMachineOptions;
  /** Puts a running cell's `input()` to the person (see `cellQuestions`). */
  ask: InputAnswerer;
}

interface ToolDefinition<In extends z.ZodObject> {
  name: string;
  title: string;
  description: string;
  inputSchema: In;
  outputSchema?: z.ZodObject;
  annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
  /** The MCP Apps view it links (`MACHINE_VIEW_META`), or that only the view calls it (`VIEW_ONLY_META`). */
  _meta?: Record<string, unknown>;
  handler(args: z.infer<In>, context: ToolContext): Promise<CallToolResult>;
}

/** Keeps each tool's argument types tied to its schema. */
function tool<In extends z.ZodObject>(definition: ToolDefinition<In>): ToolDefinition<In> {
  convertedOnce(definition.inputSchema);
  if (definition.outputSchema) convertedOnce(definition.outputSchema);
  return definition;
}

type JsonSchemaConverter = (options: { target: string }) => Record<string, unknown>;
const convertedSchemas = new WeakSet<z.ZodObject>();

/**
 * Makes a schema compute its JSON Schema once per target. The SDK makes an MCP server for every
 * 2026-07-28 request and converts the schemas of a new server again (for the request's header
 * checks and its result), about half of what such a request cost the server; the tools never change.
 */
function convertedOnce(schema: z.ZodObject): void {
  // A schema shared by tools is converted for the first.
  if (convertedSchemas.has(schema)) return;
  convertedSchemas.add(schema);
  const standard = schema['~standard'];
  const once = (convert: JsonSchemaConverter): JsonSchemaConverter => {
    const converted = new Map<string, Record<string, unknown>>();
    return (options) => converted.get(options.target) ?? converted.set(options.target, convert(options)).get(options.target)!;
  };
  const jsonSchema = { input: once(standard.jsonSchema.input), output: once(standard.jsonSchema.output) };
  Object.defineProperty(schema, '~standard', { value: { ...standard, jsonSchema } });
}

const replId = MachineName.describe('The machine name returned by create-python-repl');

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
const json = (value: unknown): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
  structuredContent: value as Record<string, unknown>,
});

/**
 * The result of an instruction as an MCP tool result: output, value or traceback, Perennial's
 * notices and losses, figures. The structured content carries all of it, figures by their
 * resource URIs, since some clients (VS Code) give the model that instead of the text.
 */
function execResult(name: string, seq: number, chunks: OutputChunk[], result: ExecResult, inlineImages: number): CallToolResult {
  const view = viewResult(result);
  const figures = figureContent(name, seq, view.images, inlineImages);
  const more = [...(figures.note ? [figures.note] : []), ...(view.timedOut ? ['Give it longer with the timeoutSeconds argument (0: no limit).'] : [])];
  return {
    content: [{ type: 'text', text: resultText(chunks, result, more) }, ...figures.blocks],
    structuredContent: {
      stdout: streamText(chunks, 'stdout'),
      stderr: streamText(chunks, 'stderr'),
      value: view.value,
      error: view.error,
      displayed: view.displayed.map((d) => d.text),
      notes: [...view.notes.map((note) => note.text), ...more],
      lost: result.data?.lost ?? [],
      figures: figures.refs,
      runtimeMs: result.runtime_ms,
      seq,
    },
    ...(view.error !== null ? { isError: true } : {}),
  };
}

/** What an instruction gives back, in a run tool's structured content (see `execResult`). */
const RunOutput = z.object({
  stdout: z.string(),
  stderr: z.string(),
  value: z.string().nullable(),
  error: z.string().nullable(),
  displayed: z.array(z.string()).describe('What the code displayed (display(obj)), as text, in order'),
  notes: z.array(z.string()).describe("Perennial's notices and losses (what a swap or a restart did not keep), and where the figures not shown inline are"),
  lost: z.array(z.object({ name: z.string(), reason: z.string() })).describe('Variables that did not survive a swap, and why'),
  figures: z
    .array(z.object({ uri: z.string(), inline: z.boolean() }))
    .describe('Every figure the code drew, as a resource to read; inline ones are also in the result as images'),
  runtimeMs: z.number(),
  seq: z.number().int(),
});

/** What follow-repl-instruction gives back. */
const FollowOutput = z.object({
  found: z.boolean().describe('Whether the instruction was found (by code: whether it has started)'),
  seq: z.number().int().nullable(),
  chunks: z.array(z.object({ stream: z.enum(['stdout', 'stderr']), data: z.string(), seq: z.number().int() })).describe('The output after `from`, in order'),
  next: z.number().int().describe('The `from` of the next call'),
  done: z.boolean(),
});
export type FollowOutput = z.infer<typeof FollowOutput>;

/** How long output that has started to come is held for what follows it. */
const FOLLOW_COALESCE_MS = 150;

/** The newest of a machine's last few instructions that runs `code`, if it came after `after` and started at `since` or later. */
async function newestWithCode(client: PerennialClient, name: string, code: string, after: number, since: number): Promise<number | undefined> {
  const entry = (await client.history(name, 5)).findLast((e) => e.code === code);
  return entry && entry.seq > after && Date.parse(entry.startedAt) >= since ? entry.seq : undefined;
}

/** What a run tool's structured content holds (the MCP App view reads it too). */
export type RunOutput = z.infer<typeof RunOutput>;

/** What describe-python-repl gives back. */
export interface ReplDescription {
  machine: MachineInfo;
  variables: VariableSummary[];
  /** Null where the backend keeps none (hosted ForeverVM). */
  checkpoints: CheckpointInfo[] | null;
}

const CheckpointOutput = z.object({
  id: z.string(),
  label: z.string().nullable(),
  seq: z.number().int(),
  at: z.string(),
  bytes: z.number(),
  auto: z.boolean(),
});

const checkpointName = (checkpoint: CheckpointInfo) => (checkpoint.label ? `${checkpoint.id} ("${checkpoint.label}")` : checkpoint.id);

/** Runs `code` as an instruction: output lines as progress, interrupted when the call is cancelled. */
async function runInstruction(
  name: string,
  code: string,
  timeoutSeconds: number | undefined,
  { client, signal, progress, inlineImages, ask }: ToolContext,
): Promise<CallToolResult> {
  const stop = () => void client.interrupt(name).catch(() => {});
  signal.addEventListener('abort', stop, { once: true });
  try {
    const chunks: OutputChunk[] = [];
    const { seq, result } = await client.run(name, code, {
      timeoutSeconds,
      onInput: ask,
      onOutput: (chunk) => {
        chunks.push(chunk);
        void progress(chunk.data);
      },
    });
    return execResult(name, seq, chunks, result, inlineImages);
  } finally {
    signal.removeEventListener('abort', stop);
  }
}

/**
 * One line of Python that runs a file in the REPL's namespace. The file is compiled under its own
 * path, so a traceback shows its lines; a JSON string is a Python string literal.
 */
function runFileCode(path: string): string {
  return `__file__ = ${JSON.stringify(path)}; exec(compile(open(__file__, encoding="utf-8").read(), __file__, "exec"), globals())`;
}

export const TOOLS = [
  tool({
    name: 'create-python-repl',
    title: 'Create a Python REPL',
    description:
      'Creates a persistent Python REPL (a machine) and returns its name, the replId for the other tools. Its variables, imports and files survive until it is deleted.',
    inputSchema: z.object({
      name: NewMachineOptions.shape.name.describe('A name for it, such as what it is for (letters, digits, - and _); by default a readable one is made'),
      engine: EngineName.optional().describe("sandbox (isolated Pyodide, the default) or python (the user's own interpreter)"),
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
  }),
  tool({
    name: 'run-python-in-repl',
    title: 'Run Python in a REPL',
    description:
      'Runs Python code in a REPL and returns its output and the repr of the last expression, or the traceback. State persists between calls. Matplotlib figures come back as images and as perennial:// resources.',
    inputSchema: z.object({
      pythonCode: z.string().describe('The code; the value of its last expression is returned'),
      replId,
      timeoutSeconds: TimeoutSeconds.optional().describe('Interrupt the code after this many seconds (default 15; 0: no limit)'),
    }),
    outputSchema: RunOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    _meta: MACHINE_VIEW_META,
    handler: ({ pythonCode, replId: name, timeoutSeconds }, context) => runInstruction(name, pythonCode, timeoutSeconds, context),
  }),
  tool({
    name: 'run-file-in-repl',
    title: 'Run a Python file in a REPL',
    description:
      "Runs a .py file in a REPL's namespace, as IPython's %run -i does: what it defines stays for later calls, __name__ is '__main__' and __file__ is set. The path is inside the REPL: relative to its working directory (for a sandbox REPL with the workspace mounted, the workspace) or absolute.",
    inputSchema: z.object({
      path: FilePath.describe('The file, inside the REPL'),
      replId,
      timeoutSeconds: TimeoutSeconds.optional().describe('Interrupt the code after this many seconds (default 15; 0: no limit)'),
    }),
    outputSchema: RunOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    _meta: MACHINE_VIEW_META,
    handler: ({ path, replId: name, timeoutSeconds }, context) => runInstruction(name, runFileCode(path), timeoutSeconds, context),
  }),
  tool({
    name: 'list-python-repls',
    title: 'List Python REPLs',
    description: 'Lists the REPLs, newest first, optionally only those carrying all the given tags.',
    inputSchema: z.object({ tags: TagFilter.optional() }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ tags }, { client }) {
      return json({ repls: await client.list(tags) });
    },
  }),
  tool({
    name: 'delete-python-repl',
    title: 'Delete a Python REPL',
    description: 'Deletes a REPL with all its state and files.',
    inputSchema: z.object({ replId }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handler({ replId: name }, { client }) {
      await client.delete(name);
      return text(`Deleted ${name}`);
    },
  }),
  tool({
    name: 'interrupt-python-repl',
    title: 'Interrupt a Python REPL',
    description: 'Stops the code running in a REPL (KeyboardInterrupt) and cancels what waits; the state is kept.',
    inputSchema: z.object({ replId }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    async handler({ replId: name }, { client }) {
      return json(await client.interrupt(name));
    },
  }),
  tool({
    name: 'list-repl-variables',
    title: 'List REPL variables',
    description: "Lists a REPL's variables: name, type, a short repr and size.",
    inputSchema: z.object({ replId }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ replId: name }, { client }) {
      return json({ variables: await client.variables(name) });
    },
  }),
  tool({
    name: 'describe-python-repl',
    title: 'Describe a Python REPL',
    description:
      'A REPL as it is now, in one call: its state, engine and next instruction number, its variables and its checkpoints (null where the backend keeps none).',
    inputSchema: z.object({ replId }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    _meta: VIEW_ONLY_META,
    async handler({ replId: name }, { client }) {
      const [machine, variables, checkpoints] = await Promise.all([
        client.get(name),
        client.variables(name),
        client.checkpoints(name).catch((error: unknown) => {
          if (error instanceof UnsupportedByBackendError) return null;
          throw error;
        }),
      ]);
      return json({ machine, variables, checkpoints } satisfies ReplDescription);
    },
  }),
  tool({
    name: 'follow-repl-instruction',
    title: 'Follow a REPL instruction',
    description:
      "An instruction's output so far, in the order it came: by its seq, or the newest of the last few whose code is pythonCode (or that runs the file at path). Waits up to waitSeconds for output the caller has not had (from), and says when the instruction is done. The MCP App view shows a call's output with it as the call runs.",
    inputSchema: z.object({
      replId,
      seq: z.number().int().min(0).optional().describe('The instruction'),
      pythonCode: z.string().optional().describe('Without seq: the code the instruction runs'),
      path: FilePath.optional().describe('Without seq: the file the instruction runs (run-file-in-repl)'),
      after: z.number().int().min(0).optional().describe('Without seq: only an instruction after this one'),
      since: z.iso.datetime({ offset: true }).optional().describe('Without seq: only an instruction started at this time or later'),
      from: z.number().int().min(0).optional().describe('How many chunks the caller has: only later ones come'),
      waitSeconds: z.number().min(0).max(20).optional().describe('How long to wait for new output (default 10)'),
    }),
    outputSchema: FollowOutput,
    annotations: { readOnlyHint: true, openWorldHint: false },
    _meta: VIEW_ONLY_META,
    async handler({ replId: name, seq, pythonCode, path, after = -1, since, from = 0, waitSeconds = 10 }, { client, signal }) {
      const code = pythonCode ?? (path === undefined ? undefined : runFileCode(path));
      if (seq === undefined && code === undefined) throw new Error('Name the instruction: give seq, pythonCode or path.');
      const target = seq ?? (await newestWithCode(client, name, code!, after, since === undefined ? -Infinity : Date.parse(since)));
      if (target === undefined) return json({ found: false, seq: null, chunks: [], next: from, done: false } satisfies FollowOutput);
      const chunks: OutputChunk[] = [];
      const stop = new AbortController();
      const quit = () => stop.abort();
      signal.addEventListener('abort', quit, { once: true });
      let wake!: () => void;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      let timer = setTimeout(() => wake(), waitSeconds * 1000);
      const onOutput = (chunk: OutputChunk) => {
        chunks.push(chunk);
        // Output that starts to come is sent a moment later, with what follows it in that moment.
        if (chunks.length === from + 1) {
          clearTimeout(timer);
          timer = setTimeout(() => wake(), FOLLOW_COALESCE_MS);
        }
      };
      const following = client.follow(name, target, onOutput, stop.signal);
      try {
        const done = await Promise.race([following.then(() => true), woken.then(() => false)]);
        return json({ found: true, seq: target, chunks: chunks.slice(from), next: chunks.length, done } satisfies FollowOutput);
      } finally {
        clearTimeout(timer);
        signal.removeEventListener('abort', quit);
        stop.abort();
        following.catch(() => {});
      }
    },
  }),
  tool({
    name: 'get-repl-variable',
    title: 'Show a REPL variable',
    description: "Shows one variable's full repr (bounded).",
    inputSchema: z.object({ replId, name: VariableName }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ replId: machine, name }, { client }) {
      return json(await client.variable(machine, name));
    },
  }),
  tool({
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
  }),
  tool({
    name: 'inspect-repl-object',
    title: 'Inspect a REPL object',
    description:
      'Shows the type, call signature and docstring of a REPL variable or of a dotted path from one or from a builtin (df.groupby, json.dumps, str.split), without calling or running anything.',
    inputSchema: z.object({ replId, expression: DottedName.describe('A variable name, or a dotted path such as df.groupby') }),
    outputSchema: z.object({ name: z.string(), type: z.string(), signature: z.string().nullable(), doc: z.string().nullable() }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ replId: name, expression }, { client }) {
      const info = await client.inspect(name, expression);
      const lines = [
        `${info.name}: ${info.type}`,
        ...(info.signature ? [`Signature: ${info.name.split('.').at(-1)}${info.signature}`] : []),
        ...(info.doc ? ['', info.doc] : []),
      ];
      return { content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { ...info } };
    },
  }),
  tool({
    name: 'fork-python-repl',
    title: 'Fork a Python REPL',
    description:
      'Makes a new REPL with the same state as this one now (variables, imports, functions, files) and returns its replId. The two are independent afterwards: try something risky in the fork and keep the original as it was.',
    inputSchema: z.object({ replId, tags: ForkBody.shape.tags.describe("Labels for the fork, on top of the original's and forked_from") }),
    outputSchema: z.object({ replId: z.string() }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handler({ replId: name, tags }, { client }) {
      const fork = await client.fork(name, tags ? { tags } : {});
      return { content: [{ type: 'text', text: fork.name }], structuredContent: { replId: fork.name } };
    },
  }),
  tool({
    name: 'checkpoint-python-repl',
    title: 'Checkpoint a Python REPL',
    description: "Saves the REPL's state now (variables, imports, files) as a checkpoint to roll back to later, optionally labelled.",
    inputSchema: z.object({ replId, label: CheckpointLabel.optional().describe('A name to roll back to it by, such as before-cleanup') }),
    outputSchema: z.object({ checkpoint: CheckpointOutput }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async handler({ replId: name, label }, { client }) {
      const checkpoint = await client.checkpoint(name, label);
      return {
        content: [{ type: 'text', text: `Checkpoint ${checkpointName(checkpoint)} of ${name}, before instruction ${checkpoint.seq}` }],
        structuredContent: { checkpoint },
      };
    },
  }),
  tool({
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
  }),
  tool({
    name: 'rollback-python-repl',
    title: 'Roll a Python REPL back',
    description:
      'Returns a REPL to a checkpoint (by id or label): its variables, imports and files become what they were then. What runs is interrupted first; the state it leaves is kept as an automatic checkpoint, so a rollback can be undone.',
    inputSchema: z.object({ replId, checkpoint: CheckpointRef.describe('A checkpoint id from list-repl-checkpoints, or a label') }),
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
  }),
  tool({
    name: 'install-python-packages',
    title: 'Install Python packages',
    description:
      "Installs packages into a REPL, and into nothing else: Pyodide packages for sandbox REPLs; pip packages for python REPLs, into the REPL's own environment (which sees the user's interpreter's packages, and changes none of them). A fork takes them along; a rollback leaves them.",
    inputSchema: z.object({ replId, packages: Packages }),
    // Open-world: pip fetches from the package index; it changes only the REPL.
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    async handler({ replId: name, packages }, { client }) {
      return text(`Installed: ${await client.installPackages(name, packages)}`);
    },
  }),
  tool({
    name: 'get-repl-history',
    title: 'Show REPL history',
    description: 'The instructions a REPL ran, with their results (figures as perennial:// resource URIs), oldest first (the last N with `last`).',
    inputSchema: z.object({ replId, last: HistoryLast.optional() }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ replId: name, last }, { client }) {
      return json({ history: historyWithFigureLinks(name, await client.history(name, last)) });
    },
  }),
  tool({
    name: 'list-repl-files',
    title: 'List REPL files',
    description: 'Lists a folder inside a REPL (its working directory by default).',
    inputSchema: z.object({ replId, path: FilePath.optional() }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ replId: name, path }, { client }) {
      return json(await client.listFiles(name, path ?? ''));
    },
  }),
  tool({
    name: 'read-repl-file',
    title: 'Read a REPL file',
    description: 'Reads a file inside a REPL: text as text, anything else as base64.',
    inputSchema: z.object({ replId, path: FilePath }),
    annotations: { readOnlyHint: true, openWorldHint: false },
    async handler({ replId: name, path }, { client }) {
      const file = await client.readFile(name, path);
      const text = utf8Text(file.content);
      return json({
        path: file.path,
        size: file.size,
        ...(text === null ? { encoding: 'base64', content: file.content } : { encoding: 'utf8', content: text }),
      });
    },
  }),
  tool({
    name: 'write-repl-file',
    title: 'Write a REPL file',
    description: 'Writes a file inside a REPL, making its folders.',
    inputSchema: z.object({ replId, path: FilePath, content: z.string(), encoding: FileEncoding.optional() }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    async handler({ replId: name, path, content, encoding }, { client }) {
      return json(await client.writeFile(name, path, content, encoding ?? 'utf8'));
    },
  }),
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
