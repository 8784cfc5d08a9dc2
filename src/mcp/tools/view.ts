import { z } from 'zod';
import { UnsupportedByBackendError, type PerennialClient } from '../../shared/perennial-client.ts';
import { FilePath } from '../../shared/requests.ts';
import type { CheckpointInfo, MachineInfo, OutputChunk, VariableSummary } from '../../shared/types.ts';
import { VIEW_ONLY_META } from '../machine-view.ts';
import { runFileCode } from './running.ts';
import { json, replId, tool } from './tool.ts';

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

/** What describe-python-repl gives back. */
export interface ReplDescription {
  machine: MachineInfo;
  variables: VariableSummary[];
  /** Null where the backend keeps none (hosted ForeverVM). */
  checkpoints: CheckpointInfo[] | null;
}

export const describe = tool({
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
});

export const follow = tool({
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
});
