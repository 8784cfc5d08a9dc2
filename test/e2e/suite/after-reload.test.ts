import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { machineOf, openWithPerennial, runCells, shownInOutputs, textOutputs } from './notebooks.ts';
import { screenshot } from './workbench.ts';

/** Runs in the window notebook.test.ts had reloaded: a new extension host, the same notebook. */
suite('Perennial notebook kernel, after a window reload', () => {
  // The window comes back with the chat of the suite's chat test open; the picture is of the notebook.
  suiteSetup(() => vscode.commands.executeCommand('workbench.action.closeAuxiliaryBar'));

  test('the notebook runs in the same machine, and the variables of before the reload are there', async () => {
    const { file, machine } = JSON.parse(readFileSync(process.env.PERENNIAL_E2E_RELOADED!, 'utf8')) as { file: string; machine: string };
    const notebook = await openWithPerennial(file);
    await runCells(notebook, 6, 7);
    assert.deepEqual(textOutputs(notebook.cellAt(6)), ['82']);
    assert.equal(machineOf(notebook).name, machine);
    await shownInOutputs(6, '82');
    await screenshot('notebook-after-reload');
  });

  test('Restart gives the same machine a fresh namespace', async () => {
    const notebook = vscode.window.activeNotebookEditor!.notebook;
    const machine = machineOf(notebook);
    await vscode.commands.executeCommand('perennial.notebook.restart');
    await runCells(notebook, 9, 10);
    assert.deepEqual(textOutputs(notebook.cellAt(9)), ['False']);
    assert.deepEqual(machineOf(notebook), machine);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });
});
