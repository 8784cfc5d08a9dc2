import { dirname, posix } from 'node:path';
import * as vscode from 'vscode';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { DisplayEntry, OutputChunk, StreamName } from '../shared/types.ts';
import { chooseMachine, createDefaultMachine } from './machine-picker.ts';
import { reporting } from './reporting.ts';
import { askInInputBox } from './input-box.ts';
import { isSourceId, type MachineRef, type Sources } from './machine-source.ts';
import { cellOutputs, runningOutputs, streamItem } from './notebook-outputs.ts';
import { findNotebookMachine } from '../notebooks/notebook-machine.ts';
import { COMMANDS } from './commands.ts';
import { NotebookWidgets } from './notebook-widgets.ts';
import type { CommMessage } from '../shared/widget-state.ts';

/** VS Code's own ipynb support: no Jupyter extension needed. */
const NOTEBOOK_TYPE = 'jupyter-notebook';
const CONTROLLER_ID = 'perennial';
/** Where a notebook's machine is kept: the ipynb file's own metadata, `metadata.perennial`. */
const METADATA_KEY = 'perennial';
/** Where it is kept too, for a notebook whose metadata was not saved (workspace state, by URI). */
const STATE_KEY = 'perennial.notebookMachines';

/**
 * The "Perennial" notebook kernel: each notebook runs in a machine of its own (or one the user
 * picks), named in the notebook's metadata, so its state outlives reloads, restarts and reboots.
 * Cells run in order per machine; their outputs are standard notebook outputs.
 */
export class NotebookKernel implements vscode.Disposable {
  readonly #controller = vscode.notebooks.createNotebookController(CONTROLLER_ID, NOTEBOOK_TYPE, 'Perennial');
  readonly #subscriptions: vscode.Disposable[];
  /** Per machine, the end of what was queued on it: cells run one after another, in order. */
  readonly #queues = new Map<string, Promise<void>>();
  /** Executions of each notebook that have not ended, so that an interrupt can end the queued ones. */
  readonly #pending = new Map<string, Set<CellRun>>();
  /** Each notebook's machine as found in this window, by URI (a renamed notebook is looked for again). */
  readonly #found = new Map<string, MachineRef>();
  /** The notebooks' live widgets, their comms carried between the machine and the widget renderer. */
  readonly #widgets: NotebookWidgets;

  constructor(
    private readonly sources: Sources,
    private readonly state: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.#controller.supportedLanguages = ['python'];
    this.#controller.supportsExecutionOrder = true;
    this.#controller.description = 'Python whose state survives restarts';
    this.#controller.detail = 'Runs the notebook in a Perennial machine, named in its metadata';
    this.#controller.executeHandler = (cells, notebook) => this.#execute(cells, notebook);
    this.#controller.interruptHandler = (notebook) => this.#interrupt(notebook);
    this.#widgets = new NotebookWidgets(
      {
        deliver: async (notebook, comm) => {
          const machine = this.machineOf(notebook);
          return machine && (await this.sources[machine.source].client()).comm(machine.name, comm);
        },
        show: (cell, outputs) => this.#show(cell, outputs),
      },
      log,
    );
    this.#subscriptions = [
      this.#controller,
      this.#widgets,
      // With a machine (from a keybinding or a script), no question is asked.
      vscode.commands.registerCommand(COMMANDS.selectNotebookMachine, (machine?: MachineRef) =>
        reporting(log, "choose the notebook's machine", () => this.#choose(machine)),
      ),
      vscode.commands.registerCommand(COMMANDS.restartNotebook, () => reporting(log, 'restart the notebook', () => this.#restart())),
    ];
  }

  /** The machine a notebook runs in, when it has one; never creates one. */
  machineOf(notebook: vscode.NotebookDocument): MachineRef | undefined {
    const found = this.#found.get(notebook.uri.toString());
    if (found && !this.sources[found.source].isGone(found.name)) return found;
    const ref = this.#named(notebook);
    return ref && !this.sources[ref.source].isGone(ref.name) ? { source: ref.source, name: ref.name } : undefined;
  }

  /** The machine the notebook's metadata (or, unsaved, the workspace state) names. */
  #named(notebook: vscode.NotebookDocument): NamedMachine | undefined {
    const ref = (ipynbMetadata(notebook)?.[METADATA_KEY] ?? this.#remembered()[notebook.uri.toString()]) as NamedMachine | undefined;
    return ref && typeof ref.name === 'string' && isSourceId(ref.source) ? ref : undefined;
  }

  /**
   * The machine a notebook runs in this window, found at its first cell: one the person chose
   * for it (Select Notebook Machine), as chosen; a notebook file's, the notebook's machine on the
   * local server as every front end finds it (`findNotebookMachine`: by its path, following a
   * rename, forked for a copy, working in its folder), of the engine a person's notebook runs on;
   * else (an untitled notebook, one on ForeverVM or a team server) the one its metadata names, or a new one. The
   * lines its first output says come with it.
   */
  async #machineFor(notebook: vscode.NotebookDocument): Promise<{ machine: MachineRef; notes: string[] }> {
    const known = this.machineOf(notebook);
    if (known && this.#found.has(notebook.uri.toString())) return { machine: known, notes: [] };
    const named = this.#named(notebook);
    const { local } = this.sources;
    const onServer = notebook.uri.scheme === 'file' && local.defaults && (named?.source ?? 'local') === 'local' && !named?.chosen;
    if (!onServer) {
      const machine = known ?? (await this.#assign(notebook, await createDefaultMachine(this.sources, { notebook: posix.basename(notebook.uri.path) })));
      this.#found.set(notebook.uri.toString(), machine);
      return { machine, notes: [] };
    }
    const path = notebook.uri.fsPath;
    const found = await findNotebookMachine(await local.client(), {
      sessionName: path,
      cwd: dirname(path),
      ...(named ? { named: named.name } : {}),
      defaults: await local.defaults!.of(local.defaults!.personsEngine),
    });
    this.log.info(found.logged);
    const machine: MachineRef = { source: 'local', name: found.info.name };
    if (named?.name !== machine.name) await this.#assign(notebook, machine);
    this.#found.set(notebook.uri.toString(), machine);
    void local.refresh();
    return { machine, notes: [...found.notes, ...(found.cameBack ? [found.cameBack] : [])] };
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
  }

  async #execute(cells: vscode.NotebookCell[], notebook: vscode.NotebookDocument): Promise<void> {
    // Shown as queued at once; they run in turn on the machine, after what was queued before.
    const runs = cells.map((cell) => new CellRun(this.#controller.createNotebookCellExecution(cell)));
    const pending = this.#pending.get(notebook.uri.toString()) ?? new Set();
    this.#pending.set(notebook.uri.toString(), pending);
    for (const run of runs) pending.add(run);
    let machine: MachineRef;
    let notes: string[];
    try {
      ({ machine, notes } = await this.#machineFor(notebook));
    } catch (error) {
      for (const run of runs) run.fail(`Perennial could not start a machine for this notebook: ${(error as Error).message}`);
      return;
    } finally {
      for (const run of runs) if (run.ended) pending.delete(run);
      if (!pending.size) this.#pending.delete(notebook.uri.toString());
    }
    const key = `${machine.source}/${machine.name}`;
    const turn = (this.#queues.get(key) ?? Promise.resolve()).then(async () => {
      // As in Jupyter, a failed cell stops the cells queued after it in the same run.
      let failed = false;
      for (const run of runs) {
        if (failed) run.skip();
        // What the person needs to know of the machine goes before the first cell's output.
        else if (!run.ended) failed = !(await run.run(this.sources, machine, notes.splice(0), (comm) => this.#widgets.fromMachine(notebook, comm, run.cell)));
        pending.delete(run);
      }
      if (!pending.size) this.#pending.delete(notebook.uri.toString());
    });
    this.#queues.set(
      key,
      turn.catch(() => {}),
    );
    await turn;
  }

  /** Outputs added to a cell outside its runs (what a widget's code printed), its number and state as they were. */
  async #show(cell: vscode.NotebookCell, outputs: vscode.NotebookCellOutput[]): Promise<void> {
    const summary = cell.executionSummary;
    const execution = this.#controller.createNotebookCellExecution(cell);
    execution.executionOrder = summary?.executionOrder;
    execution.start(summary?.timing?.startTime);
    await execution.appendOutput(outputs);
    execution.end(summary?.success, summary?.timing?.endTime);
  }

  async #interrupt(notebook: vscode.NotebookDocument): Promise<void> {
    for (const run of this.#pending.get(notebook.uri.toString()) ?? []) if (!run.started) run.skip();
    const machine = this.machineOf(notebook);
    if (machine) await (await this.sources[machine.source].client()).interrupt(machine.name);
  }

  /** Sets the machine the active notebook runs in: `given`, else one the user picks or creates. */
  async #choose(given?: MachineRef): Promise<MachineRef | undefined> {
    const notebook = vscode.window.activeNotebookEditor?.notebook;
    if (!notebook) return undefined;
    const machine =
      given ?? (await chooseMachine(this.sources, 'Perennial: Select Notebook Machine', `Machine for ${posix.basename(notebook.uri.path)} to run in`));
    if (!machine) return undefined;
    // Chosen by the person: the notebook runs there as it is, whatever becomes of the file.
    await this.#assign(notebook, { ...machine, chosen: true });
    this.#found.set(notebook.uri.toString(), machine);
    return machine;
  }

  /** A fresh namespace in the active notebook's machine (asks first); its files and packages stay. */
  async #restart(): Promise<void> {
    const notebook = vscode.window.activeNotebookEditor?.notebook;
    const machine = notebook && this.machineOf(notebook);
    if (!machine) return;
    if (vscode.workspace.getConfiguration('perennial').get<boolean>('confirmRestart', true)) {
      const answer = await vscode.window.showWarningMessage(
        `Restart ${machine.name}? Its variables, imports and functions are cleared; its files and installed packages stay.`,
        { modal: true },
        'Restart',
      );
      if (answer !== 'Restart') return;
    }
    await (await this.sources[machine.source].client()).reset(machine.name);
    void vscode.window.setStatusBarMessage(`Perennial: restarted ${machine.name}`, 4000);
  }

  /** Names `machine` in the notebook's metadata (saved with the file) and in the workspace state. */
  async #assign(notebook: vscode.NotebookDocument, machine: NamedMachine): Promise<MachineRef> {
    await this.state.update(STATE_KEY, { ...this.#remembered(), [notebook.uri.toString()]: machine });
    const metadata = notebook.metadata as { metadata?: Record<string, unknown> };
    const edit = new vscode.WorkspaceEdit();
    edit.set(notebook.uri, [vscode.NotebookEdit.updateNotebookMetadata({ ...metadata, metadata: { ...metadata.metadata, [METADATA_KEY]: machine } })]);
    if (!(await vscode.workspace.applyEdit(edit))) this.log.warn(`could not name machine ${machine.name} in the metadata of ${notebook.uri.toString()}`);
    this.log.info(`notebook ${notebook.uri.toString()} runs in ${machine.source} machine ${machine.name}`);
    return { source: machine.source, name: machine.name };
  }

  #remembered(): Record<string, NamedMachine> {
    return this.state.get<Record<string, NamedMachine>>(STATE_KEY) ?? {};
  }
}

/** A notebook's machine as its metadata names it; `chosen`: the person picked it (Select Notebook Machine), rather than it being the notebook's own. */
type NamedMachine = MachineRef & { chosen?: boolean };

/** The ipynb file's own metadata (kernelspec, language_info, …), as VS Code's ipynb support keeps it. */
function ipynbMetadata(notebook: vscode.NotebookDocument): Record<string, unknown> | undefined {
  return (notebook.metadata as { metadata?: Record<string, unknown> }).metadata;
}

/** One cell's execution: queued, then run on a machine with its outputs streamed in. */
class CellRun {
  started = false;
  ended = false;
  /** Output edits are applied one after another, so that they land in the order they came. */
  #edits: Promise<unknown> = Promise.resolve();
  #layoutQueued = false;
  /** What Perennial says before the cell's own output (the machine came back, moved, was forked). */
  #noted: vscode.NotebookCellOutput[] = [];

  constructor(private readonly execution: vscode.NotebookCellExecution) {}

  get cell(): vscode.NotebookCell {
    return this.execution.cell;
  }

  /**
   * Runs the cell, its output after `notes` (what the person needs to know of the machine), its
   * widgets' comm messages to `onComm`; answers whether it succeeded.
   */
  async run(sources: Sources, machine: MachineRef, notes: string[], onComm: (comm: CommMessage) => void): Promise<boolean> {
    const { execution } = this;
    this.started = true;
    execution.start(Date.now());
    this.#edit(() => execution.clearOutput());
    const code = execution.cell.document.getText();
    let stream: { name: StreamName; output: vscode.NotebookCellOutput } | undefined;
    const chunks: OutputChunk[] = [];
    this.#noted = notes.length
      ? [
          new vscode.NotebookCellOutput([streamItem('stderr', notes.map((note) => `[perennial] ${note}\n`).join(''))], {
            outputType: 'stream',
            stream: 'stderr',
          }),
        ]
      : [];
    if (this.#noted.length) this.#edit(() => execution.replaceOutput(this.#noted));
    const entries: DisplayEntry[] = [];
    const onDisplay = (entry: DisplayEntry) => {
      if ('comm' in entry) {
        onComm(entry.comm);
        return;
      }
      entries.push(entry);
      this.#showRunning(chunks, entries);
    };
    const onOutput = (chunk: OutputChunk) => {
      chunks.push(chunk);
      // Once the cell displayed something, its outputs are laid out again as they change (a
      // clear_output, a display-id update); until then, a line is appended.
      if (entries.length) {
        this.#showRunning(chunks, entries);
        return;
      }
      const item = streamItem(chunk.stream, `${chunk.data}\n`);
      if (stream?.name === chunk.stream) {
        const { output } = stream;
        this.#edit(() => execution.appendOutputItems(item, output));
      } else {
        const output = new vscode.NotebookCellOutput([item], { outputType: 'stream', stream: chunk.stream });
        stream = { name: chunk.stream, output };
        this.#edit(() => execution.appendOutput(output));
      }
    };
    try {
      // 0 is no limit, as in Jupyter.
      const timeout = vscode.workspace.getConfiguration('perennial').get<number>('notebookCellTimeoutSeconds') ?? 0;
      const { seq, result } = await (
        await sources[machine.source].client()
      ).run(machine.name, code, { timeoutSeconds: timeout, onOutput, onInput: askInInputBox, onDisplay });
      execution.executionOrder = seq + 1;
      // Its streams were shown as they came; what it displayed goes in its place among them.
      this.#edit(() => execution.replaceOutput([...this.#noted, ...cellOutputs(chunks, result, seq + 1)]));
      return this.#end(!('error' in result));
    } catch (error) {
      const gone = error instanceof ForeverVMError && error.code === 'MachineNotFound';
      const message = gone
        ? `Machine ${machine.name} no longer exists (it was deleted elsewhere). Choose another with "Perennial: Select Notebook Machine", or run again for a new one.`
        : (error as Error).message;
      this.#edit(() => execution.appendOutput(new vscode.NotebookCellOutput([vscode.NotebookCellOutputItem.error({ name: 'Perennial', message })])));
      return this.#end(false);
    }
  }

  /** Ends the cell without running it (an interrupt, or a cell before it failed). */
  skip(): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.started) this.execution.start();
    this.execution.end(undefined);
  }

  /** Ends the cell with an error before it ran. */
  fail(message: string): void {
    this.started = true;
    this.execution.start(Date.now());
    this.#edit(() => this.execution.replaceOutput(new vscode.NotebookCellOutput([vscode.NotebookCellOutputItem.error({ name: 'Perennial', message })])));
    void this.#end(false);
  }

  /** Lays out the running cell's outputs again, once for however many changes came meanwhile. */
  #showRunning(chunks: OutputChunk[], entries: DisplayEntry[]): void {
    if (this.#layoutQueued) return;
    this.#layoutQueued = true;
    this.#edit(() => {
      this.#layoutQueued = false;
      return this.execution.replaceOutput([...this.#noted, ...runningOutputs(chunks, entries)]);
    });
  }

  #edit(apply: () => Thenable<void>): void {
    this.#edits = this.#edits.then(apply, apply);
  }

  async #end(success: boolean): Promise<boolean> {
    this.ended = true;
    await this.#edits.catch(() => {});
    this.execution.end(success, Date.now());
    return success;
  }
}
