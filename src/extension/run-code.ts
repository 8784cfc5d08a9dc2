import * as vscode from 'vscode';
import type { PerennialClient } from '../shared/perennial-client.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { ActiveMachine } from './active-machine.ts';
import type { MachineRef, Sources } from './machine-source.ts';
import type { OutputPanel } from './output-panel.ts';
import { askInInputBox } from './input-box.ts';
import { COMMANDS } from './commands.ts';

const CELL_MARKER = /^#\s*%%/;

/**
 * Running code from the editor in the active machine: the selection (or the current line), and
 * `# %%` cells, each with a "Run Cell" CodeLens. Output streams into the output panel.
 */
export function registerRunCommands(sources: Sources, active: ActiveMachine, panel: OutputPanel, log: vscode.LogOutputChannel): vscode.Disposable {
  // Code is sent in the order it was run, even when a run is started before the last one is sent.
  let sent: Promise<void> = Promise.resolve();
  const run = (code: string) => {
    const previous = sent;
    let markSent!: () => void;
    sent = new Promise((resolve) => (markSent = resolve));
    return runInMachine(code, { sources, active, panel, log }, previous, markSent);
  };
  // Plain commands rather than text-editor commands: their promise reaches executeCommand's caller.
  return vscode.Disposable.from(
    vscode.commands.registerCommand(COMMANDS.runSelection, async () => {
      const editor = vscode.window.activeTextEditor;
      if (!editor) return;
      const { selection, document } = editor;
      const code = selection.isEmpty ? document.lineAt(selection.active.line).text : document.getText(selection);
      if (!code.trim()) return;
      await run(code);
      // Like a REPL: after running a line, the cursor moves on to the next one.
      if (selection.isEmpty && selection.active.line + 1 < document.lineCount) {
        const next = new vscode.Position(selection.active.line + 1, 0);
        editor.selection = new vscode.Selection(next, next);
      }
    }),
    vscode.commands.registerCommand(COMMANDS.runCell, async (line?: number) => {
      const editor = vscode.window.activeTextEditor;
      if (!editor) return;
      const range = cellAt(editor.document, line ?? editor.selection.active.line);
      const code = editor.document.getText(range);
      if (code.trim()) await run(code);
    }),
    vscode.languages.registerCodeLensProvider({ language: 'python' }, { provideCodeLenses: cellLenses }),
  );
}

type RunEntry = ReturnType<OutputPanel['start']>;

interface RunContext {
  sources: Sources;
  active: ActiveMachine;
  panel: OutputPanel;
  log: vscode.LogOutputChannel;
}

async function runInMachine(code: string, { sources, active, panel, log }: RunContext, previous: Promise<void>, markSent: () => void): Promise<void> {
  let machine: MachineRef | undefined;
  let entry: RunEntry | undefined;
  let running: ReturnType<PerennialClient['run']>;
  try {
    await previous;
    machine = await active.ensure();
    if (!machine) return;
    const started = panel.start(machine.name, code);
    entry = started;
    const client = await sources[machine.source].client();
    const timeout = vscode.workspace.getConfiguration('perennial').get<number>('instructionTimeoutSeconds');
    // A machine's instructions run in the order they are given to the client.
    running = client.run(machine.name, code, {
      timeoutSeconds: timeout ?? 0,
      onOutput: (chunk) => started.output(chunk.stream, chunk.data),
      onInput: askInInputBox,
    });
  } catch (error) {
    return reportFailure(error as Error, machine?.name, entry, active, log);
  } finally {
    markSent();
  }
  try {
    entry.finish((await running).result);
  } catch (error) {
    return reportFailure(error as Error, machine.name, entry, active, log);
  }
  // A backend without an event stream is listed again, for the machine's state and variables.
  const source = sources[machine.source];
  if (source.id === 'forevervm') void source.refresh().catch(() => {});
}

/** A failed run: in the panel, and as a notification with the next step (not waited for). */
async function reportFailure(
  error: Error,
  name: string | undefined,
  entry: RunEntry | undefined,
  active: ActiveMachine,
  log: vscode.LogOutputChannel,
): Promise<void> {
  entry?.fail(error.message);
  log.error(`running code in ${name ?? '(no machine)'}: ${error.stack ?? error.message}`);
  if (error instanceof ForeverVMError && error.code === 'MachineNotFound') {
    await active.set(undefined);
    void vscode.window
      .showErrorMessage(`Perennial: machine ${name} no longer exists (it was deleted elsewhere).`, 'Select Machine')
      .then((choice) => choice && active.choose());
    return;
  }
  if (error instanceof ForeverVMError && error.status === 401) {
    void vscode.window
      .showErrorMessage('Perennial: the server refused the token. For ForeverVM, set a valid token.', 'Set ForeverVM Token')
      .then((choice) => choice && vscode.commands.executeCommand(COMMANDS.setForeverVMToken));
    return;
  }
  const next = error instanceof ForeverVMError && error.code === 'Unreachable' ? ' Is the Perennial server running? It is started on demand; see the log.' : '';
  void vscode.window.showErrorMessage(`Perennial could not run the code: ${error.message}.${next}`, 'Show Log').then((choice) => choice && log.show());
}

/** The `# %%` cell holding `line`: from its marker (or the top) to the next marker (or the end). */
function cellAt(document: vscode.TextDocument, line: number): vscode.Range {
  let start = line;
  while (start > 0 && !CELL_MARKER.test(document.lineAt(start).text)) start--;
  let end = line + 1;
  while (end < document.lineCount && !CELL_MARKER.test(document.lineAt(end).text)) end++;
  return new vscode.Range(start, 0, end - 1, document.lineAt(end - 1).text.length);
}

function cellLenses(document: vscode.TextDocument): vscode.CodeLens[] {
  const lenses: vscode.CodeLens[] = [];
  for (let line = 0; line < document.lineCount; line++) {
    if (!CELL_MARKER.test(document.lineAt(line).text)) continue;
    lenses.push(new vscode.CodeLens(new vscode.Range(line, 0, line, 0), { title: '$(play) Run Cell', command: COMMANDS.runCell, arguments: [line] }));
  }
  return lenses;
}
