import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { FilePath, TimeoutSeconds } from '../../shared/requests.ts';
import { resultText, viewResult } from '../../shared/result-format.ts';
import { streamText, type ExecResult, type OutputChunk } from '../../shared/types.ts';
import { figureContent } from '../figures.ts';
import { MACHINE_VIEW_META } from '../machine-view.ts';
import { json, replId, tool, type Instruction, type ToolContext, type ToolDefinition } from './tool.ts';

/**
 * The result of an instruction as an MCP tool result: output, value or traceback, Perennial's
 * notices and losses, figures. The structured content carries all of it, figures by their
 * resource URIs, since some clients (VS Code) give the model that instead of the text. A run
 * tool's task ends with the same (`mcp/tasks/`).
 */
export function execResult(name: string, seq: number, chunks: OutputChunk[], result: ExecResult, inlineImages: number): CallToolResult {
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

/** What a run tool's structured content holds (the MCP App view reads it too). */
export type RunOutput = z.infer<typeof RunOutput>;

/** Runs an instruction: output lines as progress, interrupted when the call is cancelled. */
async function runInstruction(
  { machine: name, code, timeoutSeconds }: Instruction,
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

const timeoutSeconds = TimeoutSeconds.optional().describe('Interrupt the code after this many seconds (default 15; 0: no limit)');

export const runPython = runTool({
  name: 'run-python-in-repl',
  title: 'Run Python in a REPL',
  description:
    'Runs Python code in a REPL and returns its output and the repr of the last expression, or the traceback. State persists between calls. Matplotlib figures come back as images and as perennial:// resources.',
  inputSchema: z.object({ pythonCode: z.string().describe('The code; the value of its last expression is returned'), replId, timeoutSeconds }),
  instruction: ({ pythonCode, replId, timeoutSeconds }) => ({ machine: replId, code: pythonCode, timeoutSeconds }),
});

export const runFile = runTool({
  name: 'run-file-in-repl',
  title: 'Run a Python file in a REPL',
  description:
    "Runs a .py file in a REPL's namespace, as IPython's %run -i does: what it defines stays for later calls, __name__ is '__main__' and __file__ is set. The path is inside the REPL: relative to its working directory (for a sandbox REPL with the workspace mounted, the workspace) or absolute.",
  inputSchema: z.object({ path: FilePath.describe('The file, inside the REPL'), replId, timeoutSeconds }),
  instruction: ({ path, replId, timeoutSeconds }) => ({ machine: replId, code: runFileCode(path), timeoutSeconds }),
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
