import {
  isErrorResult,
  resultImages,
  type DisplayBundle,
  type ExecResult,
  type ImageData,
  type LostItem,
  type MachineRuntime,
  type OutputChunk,
} from './types.ts';

const TIMED_OUT = 'Timed out after ';

/** How the error of an instruction its timeout stopped begins. */
export function timedOutText(seconds: number): string {
  return `${TIMED_OUT}${seconds} s`;
}

export function isTimeoutError(error: string): boolean {
  return error.startsWith(TIMED_OUT);
}

const STOPPED_WITH_SERVER = 'The server stopped while this instruction ran: its effects are lost.';

/** The error of an instruction the server stopped in the middle of; `restored`: what the machine went back to. */
export function stoppedWithServerText(restored?: string): string {
  return restored ? `${STOPPED_WITH_SERVER} ${restored}` : STOPPED_WITH_SERVER;
}

/** A Python traceback's exception: its last line names it and says what happened. */
export function tracebackException(traceback: string): { name: string; message: string } {
  const last = traceback.trimEnd().split('\n').at(-1) ?? traceback;
  const match = /^([\w.]+)(?::\s?(.*))?$/.exec(last);
  return { name: match?.[1] ?? 'Error', message: match ? (match[2] ?? '') : last };
}

/** Whether an instruction never finished because the server stopped while it ran. */
export function stoppedWithServer(result: ExecResult): boolean {
  return 'error' in result && result.error.startsWith(STOPPED_WITH_SERVER);
}

/** Something Perennial says about an instruction besides its result: a notice or a loss. */
export interface ResultNote {
  kind: 'notice' | 'lost';
  text: string;
}

/**
 * An instruction's result as every surface shows it (MCP, the CLI, the VS Code panel): the value
 * or the traceback, then Perennial's notes in one wording, then the figures.
 */
export interface ResultView {
  value: string | null;
  error: string | null;
  notes: ResultNote[];
  images: ImageData[];
  /** What the code displayed (`display(obj)`), as text, each after the output chunk it followed. */
  displayed: { text: string; afterOutput: number }[];
  /** Its timeout stopped it: a surface says how to give it longer there. */
  timedOut: boolean;
}

/** `timeoutHint`: how to give an instruction longer on the caller's surface, a note when its timeout stopped it. */
export function viewResult(result: ExecResult, timeoutHint?: string): ResultView {
  const failed = isErrorResult(result);
  const timedOut = failed && isTimeoutError(result.error);
  return {
    value: failed ? null : result.value,
    error: failed ? result.error : null,
    displayed: (result.data?.display ?? [])
      .filter((entry): entry is DisplayBundle => 'data' in entry && !entry.result && typeof entry.data['text/plain'] === 'string')
      .map((entry) => ({ text: entry.data['text/plain'] as string, afterOutput: entry.afterOutput })),
    notes: [
      ...(result.data?.notices ?? []).map((text): ResultNote => ({ kind: 'notice', text })),
      ...(result.data?.lost ?? []).map((item): ResultNote => ({ kind: 'lost', text: lostText(item) })),
      ...(timedOut && timeoutHint ? [{ kind: 'notice', text: timeoutHint } satisfies ResultNote] : []),
    ],
    images: resultImages(result),
    timedOut,
  };
}

function lostText(item: LostItem): string {
  return `Not kept across the swap: ${item.name === '*' ? 'the whole state' : item.name} (${item.reason})`;
}

/**
 * The whole instruction as plain text: its output (stderr lines marked) with what it displayed in
 * its place, the traceback or
 * `Out: value`, then the notes and the caller's `more` (e.g. where figures are), each marked as
 * Perennial's.
 */
export function resultText(chunks: OutputChunk[], result: ExecResult, more: string[] = []): string {
  const view = viewResult(result);
  const lines: string[] = [];
  const displayedAfter = (count: number) => view.displayed.filter((d) => d.afterOutput === count).map((d) => d.text);
  for (const [i, c] of chunks.entries()) lines.push(...displayedAfter(i), c.stream === 'stderr' ? `[stderr] ${c.data}` : c.data);
  lines.push(...view.displayed.filter((d) => d.afterOutput >= chunks.length).map((d) => d.text));
  const parts = [lines.join('\n')];
  if (view.error !== null) parts.push(view.error);
  else if (view.value !== null) parts.push(`Out: ${view.value}`);
  for (const note of [...view.notes.map((n) => n.text), ...more]) parts.push(`[perennial] ${note}`);
  const figures = view.images.length;
  return parts.filter(Boolean).join('\n') || (figures ? `(${figures} figure${figures === 1 ? '' : 's'})` : '(no output, no value)');
}

/** A runtime in words: "Pyodide 0.29.0 (Python 3.13.2)", "Python 3.11.2". */
export function describeRuntime(runtime: MachineRuntime | null | undefined): string {
  if (!runtime) return 'an unknown runtime';
  return runtime.pyodide ? `Pyodide ${runtime.pyodide} (Python ${runtime.python})` : `Python ${runtime.python}`;
}
