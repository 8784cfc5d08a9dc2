import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as vscode from 'vscode';
import { suiteChanges } from './changes.ts';
import { machineOf, openWithPerennial, runCells, shownInOutputs, textOutputs } from './notebooks.ts';
import { screenshot } from './workbench.ts';

/** Runs in the window notebook.test.ts had reloaded: a new extension host, the same notebook. */
suite('Perennial notebook kernel, after a window reload', () => {
  const changes = suiteChanges();

  suiteSetup(async () => {
    // The window may come back with the chat of the suite's chat test open; the picture is of the notebook.
    await vscode.commands.executeCommand('workbench.action.closeAuxiliaryBar');
    await changes.setting('perennial.confirmRestart', false);
  });

  /** The notebook and its machine, as notebook.test.ts left them before the reload. */
  const before = () => JSON.parse(readFileSync(process.env.PERENNIAL_E2E_RELOADED!, 'utf8')) as { file: string; machine: string };

  test('the notebook runs in the same machine, and the variables of before the reload are there', async () => {
    const { file, machine } = before();
    const notebook = await openWithPerennial(file);
    await runCells(notebook, 6, 7);
    // The first cell of the window says, once, that the state came back.
    assert.deepEqual(textOutputs(notebook.cellAt(6)), [
      `[perennial] Machine ${machine} is this notebook's machine: its variables, imports and functions are as the last kernel left them.\n`,
      '82',
    ]);
    assert.equal(machineOf(notebook).name, machine);
    await shownInOutputs(6, '82');
    await screenshot('notebook-after-reload');
  });

  test('Restart gives the same machine a fresh namespace', async () => {
    const notebook = await openWithPerennial(before().file);
    const machine = machineOf(notebook);
    await vscode.commands.executeCommand('perennial.notebook.restart');
    await runCells(notebook, 9, 10);
    assert.deepEqual(textOutputs(notebook.cellAt(9)), ['False']);
    assert.deepEqual(machineOf(notebook), machine);
    // x again, as the reload left it.
    await runCells(notebook, 0, 1);
  });
});
