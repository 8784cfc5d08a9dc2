import * as vscode from 'vscode';
import { tracebackException, viewResult } from '../shared/result-format.ts';
import { figureImages, type CommDelivery, type DisplayBundle, type DisplayEntry, type ExecResult, type OutputChunk, type StreamName } from '../shared/types.ts';

/** MIME types a bundle is shown as, richest first, as Jupyter picks them; text/plain last. */
const MIME_ORDER = [
  'application/vnd.jupyter.widget-view+json',
  'application/javascript',
  'text/html',
  'image/svg+xml',
  'text/markdown',
  'text/latex',
  'image/png',
  'image/jpeg',
  'application/json',
  'text/plain',
];
const BINARY = new Set(['image/png', 'image/jpeg', 'application/pdf']);

/** A stream line as the output item a notebook shows it with. */
export function streamItem(stream: StreamName, text: string): vscode.NotebookCellOutputItem {
  return stream === 'stdout' ? vscode.NotebookCellOutputItem.stdout(text) : vscode.NotebookCellOutputItem.stderr(text);
}

/**
 * A cell's outputs once its result is in, as Jupyter lays them out: its streams and what it
 * displayed in the order they came, its figures, then the value as IPython shows it (or the
 * error), then Perennial's notes.
 */
export function cellOutputs(chunks: OutputChunk[], result: ExecResult, executionCount: number): vscode.NotebookCellOutput[] {
  const shown = new ShownOutputs(chunks, result.data?.display ?? []);
  const after = resultOutputs(result, executionCount, shown.valueBundle);
  return [...shown.outputs(after.length > 0), ...after];
}

/** A running cell's outputs so far: its streams and what it displayed, in the order they came. */
export function runningOutputs(chunks: OutputChunk[], entries: DisplayEntry[]): vscode.NotebookCellOutput[] {
  return new ShownOutputs(chunks, entries).outputs(false);
}

/** What a widget's code printed and displayed outside any cell (a button's handler), as outputs: its comm messages are the widgets'. */
export function deliveredOutputs(events: CommDelivery['events']): vscode.NotebookCellOutput[] {
  const chunks: OutputChunk[] = [];
  const entries: DisplayEntry[] = [];
  for (const event of events) {
    if ('stream' in event)
      chunks.push(
        ...event.text
          .replace(/\n$/, '')
          .split('\n')
          .map((data) => ({ stream: event.stream, data, seq: 0 })),
      );
    else if (!('comm' in event.display)) entries.push({ ...event.display, afterOutput: chunks.length } as DisplayEntry);
  }
  return runningOutputs(chunks, entries);
}

/**
 * Streams and displays laid out as Jupyter does: `clear_output()` clears what came before (with
 * `wait`, once the next output comes), and a bundle with `update` replaces the one of its `display_id`.
 */
class ShownOutputs {
  /** The cell's value as IPython shows it, when it has a bundle. */
  valueBundle?: DisplayBundle;
  #outputs: vscode.NotebookCellOutput[] = [];
  #byId = new Map<string, number>();
  #clearWaiting = false;

  constructor(chunks: OutputChunk[], entries: DisplayEntry[]) {
    const placeAfter = (count: number) => entries.filter((e) => e.afterOutput === count).forEach((e) => this.#place(e));
    for (const [i, chunk] of chunks.entries()) {
      placeAfter(i);
      this.#clearIfWaiting();
      const last = this.#outputs.at(-1);
      const item = streamItem(chunk.stream, `${chunk.data}\n`);
      if (last?.metadata?.stream === chunk.stream)
        this.#outputs[this.#outputs.length - 1] = new vscode.NotebookCellOutput([...last.items, item], last.metadata);
      else this.#outputs.push(new vscode.NotebookCellOutput([item], { outputType: 'stream', stream: chunk.stream }));
    }
    entries.filter((e) => e.afterOutput >= chunks.length).forEach((e) => this.#place(e));
  }

  /** The outputs; `more`: others follow, which a waiting clear clears these for. */
  outputs(more: boolean): vscode.NotebookCellOutput[] {
    if (more) this.#clearIfWaiting();
    return this.#outputs;
  }

  #place(entry: DisplayEntry): void {
    // A widget's messages go to the widget renderer (notebook-widgets.ts), not into the outputs.
    if ('comm' in entry) return;
    if (!('data' in entry)) {
      if (entry.wait) this.#clearWaiting = true;
      else this.#clear();
      return;
    }
    if (entry.result) {
      this.valueBundle = entry;
      return;
    }
    const output = bundleOutput(entry, { outputType: 'display_data' });
    const id = entry.transient?.display_id;
    const shown = id === undefined ? undefined : this.#byId.get(id);
    if (entry.update) {
      if (shown !== undefined) this.#outputs[shown] = output;
      return;
    }
    this.#clearIfWaiting();
    if (id !== undefined) this.#byId.set(id, this.#outputs.length);
    this.#outputs.push(output);
  }

  #clearIfWaiting(): void {
    if (this.#clearWaiting) this.#clear();
  }

  #clear(): void {
    this.#outputs = [];
    this.#byId.clear();
    this.#clearWaiting = false;
  }
}

/** A result as notebook outputs: figures and `_repr_png_` images, then the value (richly, where IPython shows it so) or the error, then Perennial's notes. */
function resultOutputs(result: ExecResult, executionCount: number, valueBundle?: DisplayBundle): vscode.NotebookCellOutput[] {
  const view = viewResult(result, 'Give cells longer with the setting perennial.notebookCellTimeoutSeconds (0: no limit).');
  const outputs = figureImages(result).map(
    (image) =>
      new vscode.NotebookCellOutput([new vscode.NotebookCellOutputItem(Buffer.from(image.data, 'base64'), image.mimeType)], { outputType: 'display_data' }),
  );
  if (view.error !== null) outputs.push(new vscode.NotebookCellOutput([vscode.NotebookCellOutputItem.error(pythonError(view.error))], { outputType: 'error' }));
  else if (valueBundle) outputs.push(bundleOutput(valueBundle, { outputType: 'execute_result', executionCount }));
  else if (view.value !== null)
    outputs.push(
      new vscode.NotebookCellOutput([vscode.NotebookCellOutputItem.text(view.value, 'text/plain')], { outputType: 'execute_result', executionCount }),
    );
  if (view.notes.length)
    outputs.push(new vscode.NotebookCellOutput([vscode.NotebookCellOutputItem.stderr(view.notes.map((note) => `[perennial] ${note.text}\n`).join(''))]));
  return outputs;
}

function bundleOutput(bundle: DisplayBundle, metadata: Record<string, unknown>): vscode.NotebookCellOutput {
  const mimes = Object.keys(bundle.data).sort((a, b) => rank(a) - rank(b));
  const items = mimes.map((mime) => {
    const value = bundle.data[mime];
    if (BINARY.has(mime) && typeof value === 'string') return new vscode.NotebookCellOutputItem(Buffer.from(value, 'base64'), mime);
    if (typeof value === 'string') return vscode.NotebookCellOutputItem.text(value, mime);
    return vscode.NotebookCellOutputItem.json(value, mime);
  });
  return new vscode.NotebookCellOutput(items, { ...metadata, metadata: bundle.metadata, ...(bundle.transient ? { transient: bundle.transient } : {}) });
}

function rank(mime: string): number {
  const at = MIME_ORDER.indexOf(mime);
  return at === -1 ? MIME_ORDER.length - 1.5 : at;
}

/** A Python traceback as an Error: its last line names the exception and says what happened. */
function pythonError(traceback: string): Error {
  return { ...tracebackException(traceback), stack: traceback };
}
