/** A notebook the notebook tests share, and what they do with it. */
import { writeFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { count, eventually, ui } from './workbench.ts';

/** Before and after a window reload: each cell's place is fixed, the tests name them by index. */
export const NOTEBOOK_CELLS = [
  'x = 41\nprint("streamed")\nx + 1',
  'import matplotlib.pyplot as plt\nplt.plot([1, 4, 9, 16])\nplt.title("squares")\nplt.show()',
  '1 / 0',
  'import time\nprint("started", flush=True)\nwhile True:\n    time.sleep(0.05)',
  'notebook_total = x + 1\nnotebook_total',
  'notebook_tot',
  'x * 2',
  'order = []',
  'import time\ntime.sleep(1)\norder.append("first")',
  '"x" in globals()',
  '%timeit -n 2 -r 2 sum(range(100))\n!echo from-the-shell',
  'import pandas as pd\ndisplay(pd.DataFrame({"city": ["Lyon", "Oslo"], "rain_mm": [831, 763]}))',
  'display("asked next")\nwho = input("Your name? ")\nprint("hello", who)',
];

/** Writes an .ipynb of code cells. */
export function writeNotebook(file: string, sources: string[]): void {
  const cells = sources.map((source) => ({ cell_type: 'code', execution_count: null, metadata: {}, outputs: [], source }));
  writeFileSync(file, JSON.stringify({ cells, metadata: { language_info: { name: 'python' } }, nbformat: 4, nbformat_minor: 5 }, null, 1));
}

/** The machine a notebook runs in, as its metadata names it. */
export function machineOf(notebook: vscode.NotebookDocument): { source: 'local' | 'forevervm'; name: string } {
  const { source, name } = (notebook.metadata as { metadata: { perennial: { source: 'local' | 'forevervm'; name: string } } }).metadata.perennial;
  return { source, name };
}

/** Opens the notebook in an editor and picks the Perennial kernel for it, as from the kernel picker. */
export async function openWithPerennial(file: string): Promise<vscode.NotebookDocument> {
  const notebook = await vscode.workspace.openNotebookDocument(vscode.Uri.file(file));
  await vscode.window.showNotebookDocument(notebook);
  await vscode.commands.executeCommand('notebook.selectKernel', { id: 'perennial', extension: 'perennial.perennial-repl' });
  return notebook;
}

/** Runs cells [start, end) as the Run buttons do, and waits until each has ended or been passed over. */
export async function runCells(notebook: vscode.NotebookDocument, start: number, end: number): Promise<void> {
  const before = notebook.getCells().map((cell) => cell.executionSummary?.timing?.endTime);
  await vscode.commands.executeCommand('notebook.cell.execute', { ranges: [{ start, end }], document: notebook.uri });
  // A cell that ran has a new end time; one passed over after an error has none.
  await eventually(
    () =>
      notebook
        .getCells()
        .slice(start, end)
        .every((cell, i) => cell.executionSummary?.timing?.endTime !== before[start + i] || cell.executionSummary?.executionOrder === undefined)
        ? true
        : undefined,
    `cells ${start}–${end - 1} to end`,
    120_000,
  );
}

/** A cell's outputs that are not images, as text (an error as "Name: message", then its traceback). */
export function textOutputs(cell: vscode.NotebookCell): string[] {
  return cell.outputs.flatMap((output) =>
    output.items
      .filter((item) => !item.mime.startsWith('image/'))
      .map((item) => {
        const text = new TextDecoder().decode(item.data);
        if (item.mime !== 'application/vnd.code.notebook.error') return text;
        const error = JSON.parse(text) as { name: string; message: string; stack?: string };
        return `${error.name}: ${error.message}\n${error.stack ?? ''}`;
      }),
  );
}

/**
 * Scrolls a cell into view and waits until the notebook shows `part` among the outputs: they are
 * rendered in the notebook's output webview, for the cells in view only.
 */
export async function shownInOutputs(index: number, part: string | { images: number }): Promise<void> {
  vscode.window.activeNotebookEditor!.revealRange(new vscode.NotebookRange(index, index + 1), vscode.NotebookEditorRevealType.InCenter);
  await eventually(
    async () => {
      if (typeof part === 'string') return (await ui({ text: '.output' })).some((text) => text.includes(part)) || undefined;
      return (await count('.output img')) >= part.images || undefined;
    },
    `${JSON.stringify(part)} in the outputs of cell ${index}`,
  );
}
