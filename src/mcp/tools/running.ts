import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { FilePath, TimeoutSeconds } from '../../shared/requests.ts';
import { resultText, viewResult } from '../../shared/result-format.ts';
import { streamText, type ExecResult, type OutputChunk } from '../../shared/types.ts';
import { figureContent } from '../figures.ts';
import { MACHINE_VIEW_META } from '../machine-view.ts';
import { answerDeadline, json, replId, tool, type Instruction, type ToolContext, type ToolDefinition } from './tool.ts';

/**
 * The result of an instruction as an MCP tool result: output, value or traceback, Perennial's
 * notices and losses, figures. The structured content carries all of it, figures by their
 * resource URIs, since some clients (VS Code) give the model that instead of the text. A run
 * tool's task ends with the same (`mcp/tasks/`), and so does wait-for-repl-instruction.
 */
export function execResult(name: string, seq: number, chunks: OutputChunk[], result: ExecResult, inlineImages: number, more: string[] = []): CallToolResult {
  const view = viewResult(result);
  const figures = figureContent(name, seq, view.images, inlineImages);
  const notes = [
    ...(figures.note ? [figures.note] : []),
    ...(view.timedOut ? ['Give it longer with the timeoutSeconds argument (0: no limit).'] : []),
    ...more,
  ];
  return {
    content: [{ type: 'text', text: resultText(chunks, result, notes) }, ...figures.blocks],
    structuredContent: {
      stdout: streamText(chunks, 'stdout'),
      stderr: streamText(chunks, 'stderr'),
      value: view.value,
      error: view.error,
      displayed: view.displayed.map((d) => d.text),
      notes: [...view.notes.map((note) => note.text), ...notes],
      lost: result.data?.lost ?? [],
      figures: figures.refs,
      runtimeMs: result.runtime_ms,
      seq,
      running: false,
    },
    ...(view.error !== null ? { isError: true } : {}),
  };
}

/**
 * What a call says of an instruction that has not ended when it answers: its output after the
 * first `from` lines, and how to come back for the rest. A run tool answers this once its time
 * to answer has passed, and wait-for-repl-instruction while the instruction runs on.
 */
export function stillRunning(name: string, seq: number, chunks: OutputChunk[], from: number, ranMs: number): CallToolResult {
  const again = { replId: name, seq, from: chunks.length };
  const note =
    `Instruction ${seq} of REPL ${name} has not finished after ${Math.round(ranMs / 1000)} s. It goes on without this call, and nothing is lost: ` +
    `call wait-for-repl-instruction ${JSON.stringify(again)} for what it prints next and, once it ends, its result (do not run the code again); ` +
    'interrupt-python-repl stops it.';
  const answer = execResult(name, seq, chunks.slice(from), { value: null, data: null, runtime_ms: ranMs }, 0, [note]);
  return { ...answer, structuredContent: { ...(answer.structuredContent as RunOutput), running: true, next: chunks.length } };
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
  running: z.boolean().describe('The code has not finished: the output is what it printed so far, and wait-for-repl-instruction gives the rest and the result'),
  next: z.number().int().optional().describe('While it runs: how many lines of output there are, the `from` of the next wait-for-repl-instruction'),
});

/** What a run tool's structured content holds (the MCP App view reads it too). */
export type RunOutput = z.infer<typeof RunOutput>;

/**
 * Runs an instruction: its output lines as progress; its result, or, once the call's time to
 * answer has passed (`answerDeadline`), the output so far and how to come back (`stillRunning`),
 * while the code runs on. A client that asks to stop the work before the answer interrupts the code.
 */
async function runInstruction(
  { machine: name, code, timeoutSeconds }: Instruction,
  { client, stop, progress, inlineImages, ask, answerWithinMs }: ToolContext,
): Promise<CallToolResult> {
  const started = Date.now();
  const chunks: OutputChunk[] = [];
  let answered = false;
  const interrupt = () => void (answered || client.interrupt(name).catch(() => {}));
  stop.addEventListener('abort', interrupt, { once: true });
  const deadline = answerDeadline(answerWithinMs);
  let onQueued!: (seq: number) => void;
  const queued = new Promise<number>((resolve) => (onQueued = resolve));
  let ran: { seq: number; result: ExecResult } | undefined;
  const run = client
    .run(name, code, {
      timeoutSeconds,
      onQueued,
      onInput: async (request, questionSignal) => {
        if (answered)
          throw new Error('the tool call that ran this cell has answered while it ran on, and nobody is left to ask; put the value in the code instead');
        return deadline.asking(() => ask(request, questionSignal));
      },
      onOutput: (chunk) => {
        chunks.push(chunk);
        if (!answered) void progress(chunk.data);
      },
    })
    .then((done) => (ran = done));
  try {
    await Promise.race([run, deadline.passed]);
    if (ran) return execResult(name, ran.seq, chunks, ran.result, inlineImages);
    // The machine numbers an instruction as it takes it, before anything ahead of it ends.
    const seq = await Promise.race([queued, run.then((done) => done.seq)]);
    run.catch(() => {});
    return stillRunning(name, seq, chunks, 0, Date.now() - started);
  } finally {
    answered = true;
    deadline.clear();
    stop.removeEventListener('abort', interrupt);
  }
}

/**
 * One line of Python that runs a file in the REPL's namespace. The file is compiled under its own
 * path, so a traceback shows its lines; a JSON string is a Python string literal.
 */
export function runFileCode(path: string): string {
  return `__file__ = ${JSON.stringify(path)}; exec(compile(open(__file__, encoding="utf-8").read(), __file__, "exec"), globals())`;
}

/** A tool that runs code: the instruction its arguments make, its result the instruction's (`execResult`). */
function runTool<In extends z.ZodObject>(
  definition: Pick<ToolDefinition<In>, 'name' | 'title' | 'description' | 'inputSchema'> & { instruction(args: z.infer<In>): Instruction },
): ToolDefinition<In> {
  return tool({
    ...definition,
    outputSchema: RunOutput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    _meta: MACHINE_VIEW_META,
    handler: (args, context) => runInstruction(definition.instruction(args), context),
  });
}

const timeoutSeconds = TimeoutSeconds.optional().describe(
  'Interrupt the code after this many seconds (default and 0: no limit, as in Python: a call answers in time whatever the code takes, and the code runs on)',
);

/** What a run tool's code may take unless the call says: no limit, since a call no longer waits for its end (`runInstruction`). */
const NO_LIMIT = 0;

/** How a call that runs code ends, for a tool's description. */
const LONG_RUNS =
  'A client that takes MCP tasks gets a task for long work. For any other, code that has not finished when the call must answer (within a minute, before MCP clients give up) runs on, and the call returns its output so far with its instruction number: wait-for-repl-instruction gives the rest and the result. Cancelling the call before it answers interrupts the code.';

export const runPython = runTool({
  name: 'run-python-in-repl',
  title: 'Run Python in a REPL',
  description: `Runs Python code in a REPL and returns its output and the repr of the last expression, or the traceback. State persists between calls. Matplotlib figures come back as images and as perennial:// resources. ${LONG_RUNS}`,
  inputSchema: z.object({ pythonCode: z.string().describe('The code; the value of its last expression is returned'), replId, timeoutSeconds }),
  instruction: ({ pythonCode, replId, timeoutSeconds = NO_LIMIT }) => ({ machine: replId, code: pythonCode, timeoutSeconds }),
});

export const runFile = runTool({
  name: 'run-file-in-repl',
  title: 'Run a Python file in a REPL',
  description: `Runs a .py file in a REPL's namespace, as IPython's %run -i does: what it defines stays for later calls, __name__ is '__main__' and __file__ is set. The path is inside the REPL: relative to its working directory (for a sandbox REPL with the workspace mounted, the workspace) or absolute. ${LONG_RUNS}`,
  inputSchema: z.object({ path: FilePath.describe('The file, inside the REPL'), replId, timeoutSeconds }),
  instruction: ({ path, replId, timeoutSeconds = NO_LIMIT }) => ({ machine: replId, code: runFileCode(path), timeoutSeconds }),
});

export const interrupt = tool({
  name: 'interrupt-python-repl',
  title: 'Interrupt a Python REPL',
  description: 'Stops the code running in a REPL (KeyboardInterrupt) and cancels what waits; the state is kept.',
  inputSchema: z.object({ replId }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async handler({ replId: name }, { client }) {
    return json(await client.interrupt(name));
  },
});

/** The longest a wait-for-repl-instruction call may ask to wait; the connection's time to answer bounds it too. */
const LONGEST_WAIT_SECONDS = 600;

export const waitForInstruction = tool({
  name: 'wait-for-repl-instruction',
  title: 'Wait for a REPL instruction',
  description:
    "Comes back to code that run-python-in-repl or run-file-in-repl answered as still running: waits for instruction seq of a REPL (its newest by default) to end, up to waitSeconds or as long as a call may, and returns its output after the first `from` lines; once it has ended, its result exactly as the run tool gives it (value or traceback, figures, notes, losses), with all its output. Call it again to wait longer. Works from any connection, after a restart, for as long as the REPL's history keeps the instruction.",
  inputSchema: z.object({
    replId,
    seq: z.number().int().min(0).optional().describe("The instruction's number, as the run tool gave it (default: the REPL's newest)"),
    from: z.number().int().min(0).optional().describe('How many lines of its output you have: only later ones come while it runs (default 0)'),
    waitSeconds: z
      .number()
      .min(0)
      .max(LONGEST_WAIT_SECONDS)
      .optional()
      .describe('How long to wait for its end (default: as long as a call may, under a minute)'),
  }),
  outputSchema: RunOutput,
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: name, seq, from = 0, waitSeconds }, { tasks, inlineImages, signal, answerWithinMs }) {
    const longest = answerWithinMs > 0 ? answerWithinMs : LONGEST_WAIT_SECONDS * 1000;
    const waitMs = Math.min(waitSeconds === undefined ? longest : waitSeconds * 1000, longest);
    const instruction = await tasks.instruction(name, seq, inlineImages, AbortSignal.any([signal, AbortSignal.timeout(waitMs)]));
    return instruction.result ?? stillRunning(name, instruction.seq, instruction.chunks, from, Date.now() - instruction.startedAt.getTime());
  },
});
