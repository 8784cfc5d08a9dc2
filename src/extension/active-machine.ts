import { dirname } from 'node:path';
import * as vscode from 'vscode';
import { chooseMachine } from './machine-picker.ts';
import { allSources, type MachineRef, type Sources } from './machine-source.ts';
import { COMMANDS } from './commands.ts';

const STATE_KEY = 'perennial.activeMachine';

/**
 * The machine that Run Selection and Run Cell send code to, shown in the status bar and kept per
 * workspace. With none (or when it was deleted elsewhere), running asks for one.
 */
export class ActiveMachine implements vscode.Disposable {
  readonly #item = vscode.window.createStatusBarItem('perennial.activeMachine', vscode.StatusBarAlignment.Left, 50);
  readonly #subscriptions: vscode.Disposable[];

  constructor(
    private readonly state: vscode.Memento,
    private readonly sources: Sources,
  ) {
    this.#item.name = 'Perennial machine';
    this.#item.command = COMMANDS.selectMachine;
    this.#subscriptions = [
      this.#item,
      // With a machine (from a keybinding or another extension), no question is asked: a name
      // is a local machine's, or { source, name }.
      vscode.commands.registerCommand(COMMANDS.selectMachine, (machine?: string | MachineRef) =>
        machine ? this.set(typeof machine === 'string' ? { source: 'local', name: machine } : machine) : this.choose(),
      ),
      // A machine deleted anywhere (the view, Copilot, the CLI) stops being the active one.
      ...allSources(sources).map((source) =>
        source.onDidChange(() => {
          const machine = this.machine;
          if (machine && machine.source === source.id && source.isGone(machine.name)) void this.set(undefined);
          else this.#render();
        }),
      ),
    ];
    this.#render();
  }

  get machine(): MachineRef | undefined {
    return this.state.get<MachineRef>(STATE_KEY);
  }

  async set(machine: MachineRef | undefined): Promise<void> {
    await this.state.update(STATE_KEY, machine);
    this.#render();
  }

  /** The active machine; when there is none, the user picks or creates one. */
  async ensure(): Promise<MachineRef | undefined> {
    return this.machine ?? this.choose();
  }

  /**
   * Asks which machine to use (or to create one), and makes it active. A new one works where
   * VS Code's Python REPL runs an editor's code: the file's workspace folder, else the file's.
   */
  async choose(): Promise<MachineRef | undefined> {
    const file = vscode.window.activeTextEditor?.document.uri;
    const folder = file?.scheme === 'file' ? (vscode.workspace.getWorkspaceFolder(file)?.uri.fsPath ?? dirname(file.fsPath)) : undefined;
    const machine = await chooseMachine(this.sources, 'Perennial: Select Active Machine', 'Machine to run code in', folder);
    if (machine) await this.set(machine);
    return machine;
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
  }

  #render(): void {
    const active = this.machine;
    const source = active && this.sources[active.source];
    const state = active && source?.get(active.name)?.state;
    const where = active && active.source !== 'local' && source ? ` on ${source.label}` : '';
    this.#item.text = active ? `$(vm) ${active.name}${where}${state ? ` (${state})` : ''}` : '$(vm) Perennial: no machine';
    this.#item.tooltip = active
      ? `Code runs in Perennial machine ${active.name}${where}. Click to choose another.`
      : 'Choose the Perennial machine to run code in';
    this.#item.show();
  }
}
