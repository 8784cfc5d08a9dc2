import type { CallToolResult } from '@modelcontextprotocol/client';
import type { RunOutput } from '../mcp/tools/index.ts';
import type { OutputChunk } from '../shared/types.ts';
import { h } from './dom.ts';

/** The call the view belongs to, as far as it is known. */
export interface Call {
  tool: string;
  /** The code it runs; for run-file-in-repl, the line that runs the file. */
  code: string | null;
  /** What the view shows above the code (a file's path, a re-run). */
  caption: string | null;
  result: CallToolResult | null;
  /** Why the host cancelled it, when it did. */
  cancelled: string | null;
  /** A re-run's: the instruction it ran again, which its own comes after. */
  after: number | null;
  /** The earliest its instruction can have started (ISO): an older one with the same code is not it. */
  since: string;
  /** Its output in the order it came, read from the server while it runs and after (follow-repl-instruction). */
  live: { seq: number; chunks: OutputChunk[]; complete: boolean } | null;
}

/** Reads a figure the result only links (a host's `resources/read`); the image as a data URI. */
export type FigureReader = (uri: string) => Promise<string>;

/**
 * Shown when the server has finished the call's instruction but the host has not passed the result
 * on: VS Code holds an open-world tool's result until the person allows it, in a prompt above the view.
 */
const HELD = 'Done in the REPL. The result has not come through the chat yet: it may be asking you to allow it first.';

/** Whether the call's result is still to come (it was not cancelled). */
export function awaitingResult(call: Call | null): boolean {
  return call !== null && call.result === null && call.cancelled === null;
}

/** The structured content of a run tool's result, when that is what the result holds. */
export function runOutput(result: CallToolResult | null): RunOutput | null {
  const content = result?.structuredContent as Partial<RunOutput> | undefined;
  return content && typeof content.seq === 'number' && Array.isArray(content.figures) ? (content as RunOutput) : null;
}

/** The call: its code, its output, its value or traceback, its figures, and what Perennial noted. */
export function callSection(call: Call, readFigure: FigureReader, zoom: (src: string, title: string) => void): HTMLElement {
  const output = runOutput(call.result);
  const prompt = output ? `In [${output.seq}]` : 'In';
  return h(
    'section',
    { class: 'call', 'aria-label': 'The call' },
    call.caption ? h('p', { class: 'caption' }, call.caption) : null,
    call.code !== null ? h('div', { class: 'cell' }, h('span', { class: 'prompt' }, prompt), h('pre', { class: 'code' }, call.code)) : null,
    call.result === null && call.live?.chunks.length ? stream(call.live.chunks) : null,
    awaitingResult(call) ? h('p', { class: 'running', role: 'status' }, call.live?.complete ? HELD : 'Running…') : null,
    call.cancelled !== null ? h('p', { class: 'notice warn' }, `Cancelled: ${call.cancelled}`) : null,
    output ? outputBlocks(output, call, readFigure, zoom) : call.result ? otherResult(call.result) : null,
  );
}

/** Output lines in the order they came, errors marked: adjacent lines of one stream run together. */
function stream(chunks: OutputChunk[]): HTMLElement {
  const pre = h('pre', { class: 'stream', 'aria-label': 'Output' });
  let run: HTMLElement | null = null;
  chunks.forEach((chunk, i) => {
    if (chunk.stream !== chunks[i - 1]?.stream) {
      run = h('span', { class: chunk.stream });
      pre.append(run);
    }
    run!.append(i ? `\n${chunk.data}` : chunk.data);
  });
  return pre;
}

function outputBlocks(output: RunOutput, call: Call, readFigure: FigureReader, zoom: (src: string, title: string) => void): DocumentFragment {
  const result = call.result!;
  const fragment = document.createDocumentFragment();
  // The order it came in, where the whole of it was read; else each stream as the result has it.
  if (call.live?.complete && call.live.seq === output.seq) {
    if (call.live.chunks.length) fragment.append(stream(call.live.chunks));
  } else {
    if (output.stdout) fragment.append(h('pre', { class: 'stream' }, h('span', { class: 'stdout' }, output.stdout)));
    if (output.stderr) fragment.append(h('pre', { class: 'stream' }, h('span', { class: 'stderr' }, output.stderr)));
  }
  for (const shown of output.displayed) fragment.append(h('pre', { class: 'displayed' }, shown));
  if (output.error !== null) fragment.append(h('pre', { class: 'traceback', 'aria-label': 'Traceback' }, output.error));
  else if (output.value !== null)
    fragment.append(h('div', { class: 'cell' }, h('span', { class: 'prompt out' }, `Out[${output.seq}]`), h('pre', { class: 'value' }, output.value)));
  if (output.figures.length) fragment.append(figures(output, result, readFigure, zoom));
  // The note that says where the figures not inline are is for the model: the view shows them all.
  const aboutFigures = (note: string) => output.figures.some((figure) => note.includes(figure.uri));
  for (const note of output.notes.filter((n) => !aboutFigures(n))) fragment.append(h('p', { class: 'notice warn' }, note));
  for (const lost of output.lost) fragment.append(h('p', { class: 'notice danger' }, `Lost ${lost.name}: ${lost.reason}`));
  fragment.append(h('p', { class: 'meta' }, `${formatMs(output.runtimeMs)}`));
  return fragment;
}

/** The figures in order: the ones inline in the result at once, the others read from the server. */
function figures(output: RunOutput, result: CallToolResult, readFigure: FigureReader, zoom: (src: string, title: string) => void): HTMLElement {
  const inline = result.content.filter((block) => block.type === 'image');
  let nextInline = 0;
  const strip = h('div', { class: 'figures' });
  output.figures.forEach((figure, i) => {
    const title = `Figure ${i + 1} of In [${output.seq}]`;
    const image = h('img', { alt: title, title: `${title}: click to zoom` });
    const button = h('button', { class: 'figure', type: 'button', 'aria-label': `Zoom ${title}` }, image);
    strip.append(button);
    const block = figure.inline ? inline[nextInline++] : undefined;
    const source = block ? Promise.resolve(`data:${block.mimeType};base64,${block.data}`) : readFigure(figure.uri);
    source.then(
      (src) => {
        image.src = src;
        button.addEventListener('click', () => zoom(src, title));
      },
      (error: Error) => button.replaceWith(h('p', { class: 'notice danger' }, `${title} could not be read: ${error.message}`)),
    );
  });
  return strip;
}

/** A result that is not a run's (create-python-repl's, or an error before the code ran): its text. */
function otherResult(result: CallToolResult): HTMLElement | null {
  const text = result.content
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
  if (!result.isError) return null;
  return h('pre', { class: 'traceback' }, text);
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}
