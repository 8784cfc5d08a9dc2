import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { suiteChanges } from './changes.ts';
import { NOTEBOOK_CELLS, machineOf, openWithPerennial, runCells, shownInOutputs, textOutputs, writeNotebook } from './notebooks.ts';
import { invoke, invokeJson } from './tools.ts';
import { count, eventually, screenshot, TREE_ROWS, ui } from './workbench.ts';

/**
 * The Perennial notebook kernel in VS Code's own ipynb support: outputs as the notebook shows
 * them, interrupt, completion from the machine; then a window reload (after-reload.test.ts). The
 * tests share one notebook and its machine; each runs the cells it needs.
 */
suite('Perennial notebook kernel', () => {
  const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'analysis.ipynb');
  const changes = suiteChanges();
  let notebook: vscode.NotebookDocument;

  suiteSetup(async () => {
    // matplotlib is in Debian's python3, which the python engine runs.
    await changes.setting('perennial.defaultEngine', 'python');
    await changes.setting('perennial.pythonPath', '/usr/bin/python3');
    writeNotebook(file, NOTEBOOK_CELLS);
    notebook = await openWithPerennial(file);
  });

  setup(() => vscode.window.showNotebookDocument(notebook));

  test('cells give a stream, a value, a figure and an error, each shown in the notebook', async () => {
    // As Run All: the cell that fails stops the ones after it.
    await runCells(notebook, 0, 4);
    const [first, plot, failing, skipped] = notebook.getCells();
    assert.deepEqual(textOutputs(first!), ['streamed\n', '42']);
    assert.equal(first!.executionSummary?.success, true);
    assert.ok(first!.executionSummary?.executionOrder, 'an execution order');
    assert.ok(first!.executionSummary?.timing, 'a time');
    assert.ok(
      plot!.outputs.some((output) => output.items.some((item) => item.mime === 'image/png')),
      'the figure as image/png',
    );
    const error = failing!.outputs.flatMap((output) => output.items).find((item) => item.mime === 'application/vnd.code.notebook.error');
    assert.equal((JSON.parse(new TextDecoder().decode(error!.data)) as { name: string }).name, 'ZeroDivisionError');
    assert.equal(skipped!.executionSummary?.executionOrder, undefined, 'the cell after the error did not run');
    await shownInOutputs(0, 'streamed');
    await shownInOutputs(0, '42');
    await shownInOutputs(2, 'ZeroDivisionError: division by zero');
    await shownInOutputs(1, { images: 1 });
    await screenshot('notebook-outputs');
  });

  test('the interrupt button stops a long cell, and the machine goes on', async () => {
    await runCells(notebook, 0, 1);
    const long = notebook.cellAt(3);
    const running = runCells(notebook, 3, 4);
    await eventually(() => (textOutputs(long).join('').includes('started') ? true : undefined), 'the long cell to start');
    await vscode.commands.executeCommand('notebook.cancelExecution');
    await running;
    assert.equal(long.executionSummary?.success, false);
    assert.match(textOutputs(long).join('\n'), /KeyboardInterrupt/);
    await runCells(notebook, 4, 5);
    assert.deepEqual(textOutputs(notebook.cellAt(4)), ['42']);
  });

  test('IPython magics and !commands run; display(df) shows an HTML table; input() is answered in an input box, with what the cell displayed shown meanwhile', async () => {
    await runCells(notebook, 10, 12);
    const magics = textOutputs(notebook.cellAt(10)).join('');
    assert.match(magics, /per loop \(mean ± std\. dev\. of 2 runs, 2 loops each\)/);
    assert.match(magics, /from-the-shell/);
    const table = notebook
      .cellAt(11)
      .outputs.flatMap((output) => output.items)
      .find((item) => item.mime === 'text/html');
    assert.match(new TextDecoder().decode(table!.data), /<table[\s\S]*Lyon/);
    await shownInOutputs(11, 'Oslo');
    assert.ok((await count('.output table')) >= 1, 'the notebook renders the table as HTML');
    const asking = runCells(notebook, 12, 13);
    await eventually(async () => ((await ui({ text: '.quick-input-widget' })).some((t) => t.includes('Your name?')) ? true : undefined), 'the input box');
    // The cell still runs: what it displayed before asking is shown already.
    assert.deepEqual(textOutputs(notebook.cellAt(12)), ["'asked next'"]);
    await shownInOutputs(12, 'asked next');
    await screenshot('notebook-input-box');
    await ui({ type: { into: '.quick-input-widget input', text: 'Ada' } });
    await asking;
    assert.equal(textOutputs(notebook.cellAt(12)).join(''), "'asked next'Your name? Ada\nhello Ada\n");
  });

  test('completion in a cell lists a variable an earlier cell defined, and hover shows its value', async () => {
    await runCells(notebook, 0, 1);
    await runCells(notebook, 4, 5);
    const cell = notebook.cellAt(5);
    const end = cell.document.lineAt(0).range.end;
    const completions = await vscode.commands.executeCommand<vscode.CompletionList>('vscode.executeCompletionItemProvider', cell.document.uri, end);
    const labels = completions.items.map((item) => (typeof item.label === 'string' ? item.label : item.label.label));
    assert.ok(labels.includes('notebook_total'), `notebook_total among ${labels.slice(0, 20).join(', ')}`);
    const hovers = await vscode.commands.executeCommand<vscode.Hover[]>(
      'vscode.executeHoverProvider',
      notebook.cellAt(4).document.uri,
      new vscode.Position(0, 3),
    );
    const hoverText = hovers.flatMap((hover) => hover.contents.map((part) => (typeof part === 'string' ? part : part.value))).join('\n');
    assert.match(hoverText, /notebook_total: int/);
    assert.match(hoverText, /42/);
  });

  test('two notebooks on one machine run their cells in the order given; a Python file completes from the active machine', async () => {
    // notebook_total, for the Python file's completion at the end.
    await runCells(notebook, 0, 1);
    await runCells(notebook, 4, 5);
    const machine = machineOf(notebook);
    await runCells(notebook, 7, 8);
    const second = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'second.ipynb');
    writeNotebook(second, ['order.append("second")\norder']);
    const other = await openWithPerennial(second);
    await vscode.commands.executeCommand('perennial.notebook.selectMachine', machine);
    assert.deepEqual(machineOf(other), machine);
    await vscode.window.showNotebookDocument(notebook);
    const first = runCells(notebook, 8, 9);
    await eventually(() => notebook.cellAt(8).executionSummary?.timing?.startTime ?? undefined, 'the first cell to start');
    await vscode.window.showNotebookDocument(other);
    await runCells(other, 0, 1);
    await first;
    assert.deepEqual(textOutputs(other.cellAt(0)), ["['first', 'second']"]);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    // A Python file's code runs in the active machine: its names complete from there.
    await vscode.commands.executeCommand('perennial.selectMachine', machine);
    const script = await vscode.workspace.openTextDocument({ language: 'python', content: 'notebook_tot' });
    const completions = await vscode.commands.executeCommand<vscode.CompletionList>(
      'vscode.executeCompletionItemProvider',
      script.uri,
      new vscode.Position(0, 12),
    );
    assert.ok(completions.items.some((item) => (typeof item.label === 'string' ? item.label : item.label.label) === 'notebook_total'));
    await vscode.window.showNotebookDocument(notebook);
  });

  test('a notebook works in its folder: it reads data.csv beside it and writes out.csv there; renamed it keeps its machine, a copy gets a fork', async () => {
    const folder = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'beside');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'data.csv'), 'city,rain_mm\nLyon,831\nOslo,763\n');
    const first = join(folder, 'rain.ipynb');
    writeNotebook(first, [
      "import csv, os\nrows = list(csv.DictReader(open('data.csv')))\nopen('out.csv', 'w').write(str(len(rows)))\nos.getcwd()",
      'len(rows)',
      "'copy' in globals()",
    ]);
    let opened = await openWithPerennial(first);
    await runCells(opened, 0, 1);
    assert.deepEqual(textOutputs(opened.cellAt(0)), [`'${folder}'`], 'a new machine says nothing, and works in the folder');
    assert.equal(readFileSync(join(folder, 'out.csv'), 'utf8'), '2');
    const machine = machineOf(opened).name;
    type Listed = { repls: Array<{ name: string; workdir?: string }> };
    const tagged = (notebookPath: string) => invokeJson<Listed>('list-python-repls', { tags: { 'jupyter-notebook': notebookPath } });
    const [mine] = (await tagged(first)).repls;
    assert.deepEqual(
      [mine?.name, mine?.workdir],
      [machine, folder],
      "tagged as the Jupyter kernel tags a notebook's machine: one machine whatever the front end",
    );
    await opened.save();
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');

    const renamed = join(folder, 'renamed.ipynb');
    await vscode.workspace.fs.rename(vscode.Uri.file(first), vscode.Uri.file(renamed));
    opened = await openWithPerennial(renamed);
    await runCells(opened, 1, 2);
    assert.deepEqual(
      textOutputs(opened.cellAt(1)),
      [
        `[perennial] This notebook was ${first}: its machine ${machine} came with it, with its variables, imports and functions as the last kernel left them, and works in ${folder}.\n`,
        '2',
      ],
      'the state came with it, and one line says so',
    );
    assert.equal(machineOf(opened).name, machine);
    assert.deepEqual(
      (await tagged(renamed)).repls.map((m) => m.name),
      [machine],
    );
    await opened.save();
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');

    const copy = join(folder, 'copy.ipynb');
    await vscode.workspace.fs.copy(vscode.Uri.file(renamed), vscode.Uri.file(copy));
    const copied = await openWithPerennial(copy);
    await runCells(copied, 1, 2);
    const notes = textOutputs(copied.cellAt(1));
    assert.match(notes[0] ?? '', /This notebook is a copy of .*renamed\.ipynb: machine \S+, its own, is a fork of that notebook's machine/);
    assert.equal(notes.at(-1), '2');
    const fork = machineOf(copied).name;
    assert.notEqual(fork, machine);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    await screenshot('notebook-copy-forked');
    changes.onEnd(() => invoke('delete-python-repl', { replId: fork }));
    await vscode.window.showNotebookDocument(notebook);
  });

  test('ipywidgets show live: a slider moved changes the value on the machine, interact updates its output; their state is saved with the notebook', async () => {
    // ipywidgets 8 as the test vendors it (Debian has ipywidgets 6, which no front end of today shows).
    const vendor = join(vscode.extensions.getExtension('perennial.perennial-repl')!.extensionPath, 'test', 'vendor');
    const widgets = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'widgets.ipynb');
    writeNotebook(widgets, [
      `import sys\nsys.path[:0] = ${JSON.stringify([join(vendor, 'ipywidgets8'), vendor])}\nimport ipywidgets as w\nslider = w.IntSlider(value=3, description='level')\nslider`,
      'slider.value',
      "shown = w.interact(lambda n: f'twice {n} is {2 * n}', n=4)",
    ]);
    const opened = await openWithPerennial(widgets);
    await runCells(opened, 0, 1);
    const handles = '.widget-slider .noUi-handle';
    await eventually(async () => ((await count(handles)) === 1 ? true : undefined), 'the slider in the output');
    await screenshot('widgets-slider');
    await ui({ press: { on: handles, key: 'ArrowRight' } });
    await eventually(async () => {
      await runCells(opened, 1, 2);
      return textOutputs(opened.cellAt(1)).join('') === '4' || undefined;
    }, 'the moved slider on the machine');

    await runCells(opened, 2, 3);
    const output = '.widget-output';
    await eventually(async () => ((await ui({ text: output })).some((text) => text.includes('twice 4 is 8')) ? true : undefined), "interact's output");
    await ui({ press: { on: `.widget-interact ${handles}`, key: 'ArrowRight' } });
    await eventually(
      async () => ((await ui({ text: output })).some((text) => text.includes('twice 5 is 10')) ? true : undefined),
      "interact's output, updated",
    );
    await screenshot('widgets-interact');

    // Moving a widget changes no cell, as in JupyterLab: the widgets' state goes into the file with
    // the next save of a changed notebook (a cell run again), whatever an auto-save wrote before.
    await runCells(opened, 1, 2);
    await opened.save();
    type Saved = { metadata: { widgets?: Record<string, { state: Record<string, { model_name: string; state: { value?: number } }> }> } };
    const saved = JSON.parse(readFileSync(widgets, 'utf8')) as Saved;
    const models = Object.values(saved.metadata.widgets?.['application/vnd.jupyter.widget-state+json']?.state ?? {});
    assert.deepEqual(
      models
        .filter((m) => m.model_name === 'IntSliderModel')
        .map((m) => m.state.value)
        .sort(),
      [4, 5],
      `the sliders as they were left, saved as Jupyter saves widgets: ${JSON.stringify(models.map((m) => [m.model_name, m.state.value]))}`,
    );
    // Opened again (a renderer of its own, started late): the widgets as they were, still live.
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    await vscode.window.showNotebookDocument(opened);
    await eventually(async () => ((await count(handles)) === 2 ? true : undefined), 'the widgets shown again');
    await ui({ press: { on: `.widget-interact ${handles}`, key: 'ArrowRight' } });
    await eventually(async () => ((await ui({ text: output })).some((text) => text.includes('twice 6 is 12')) ? true : undefined), 'interact, live again');
    changes.onEnd(() => invoke('delete-python-repl', { replId: machineOf(opened).name }));
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    await vscode.window.showNotebookDocument(notebook);
  });

  test('the machine is named in the saved notebook and shown in the Machines view; then the window reloads', async () => {
    // After the reload, cell 6 (x * 2) finds x.
    await runCells(notebook, 0, 1);
    await notebook.save();
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { metadata: { perennial?: { source: string; name: string } } };
    const machine = saved.metadata.perennial;
    assert.equal(machine?.source, 'local');
    await vscode.commands.executeCommand('perennial.refresh');
    await vscode.commands.executeCommand('perennial.machines.focus');
    await eventually(
      async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(machine!.name)) ? true : undefined),
      'the machine in the Machines view',
    );
    writeFileSync(process.env.PERENNIAL_E2E_RELOAD!, JSON.stringify({ file, machine: machine!.name }));
  });
});
