import * as vscode from 'vscode';
import type { LocalMachines } from './local-machines.ts';
import { machinePick, newMachine } from './machine-commands.ts';

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
    private readonly local: LocalMachines,
  ) {
    this.#item.name = 'Perennial machine';
    this.#item.command = 'perennial.selectMachine';
    this.#subscriptions = [
      this.#item,
      // With a machine name (from a keybinding or another extension), no question is asked.
      vscode.commands.registerCommand('perennial.selectMachine', (name?: string) => (typeof name === 'string' ? this.set(name) : this.choose())),
      // A machine deleted anywhere (the view, Copilot, the CLI) stops being the active one.
      local.onDidChange(() => (this.name && local.isGone(this.name) ? void this.set(undefined) : this.#render())),
    ];
    this.#render();
  }

  get name(): string | undefined {
    return this.state.get<string>(STATE_KEY);
  }

  async set(name: string | undefined): Promise<void> {
    await this.state.update(STATE_KEY, name);
    this.#render();
  }

  /** The active machine; when there is none, the user picks or creates one. */
  async ensure(): Promise<string | undefined> {
    return this.name ?? this.choose();
  }

  /** Asks which machine to use (or to create one), and makes it active. */
  async choose(): Promise<string | undefined> {
    const machines = await this.local.list();
    const create = { label: '$(add) New Machine…', name: undefined };
    const picked = await vscode.window.showQuickPick([...machines.map(machinePick), create], { title: 'Perennial: Select Active Machine', placeHolder: 'Machine to run code in' });
    if (!picked) return undefined;
    const name = picked.name ?? (await newMachine(this.local));
    if (name) await this.set(name);
    return name;
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
  }

  #render(): void {
    const name = this.name;
    const machine = name ? this.local.get(name) : undefined;
    this.#item.text = name ? `$(vm) ${name}${machine ? ` (${machine.state})` : ''}` : '$(vm) Perennial: no machine';
    this.#item.tooltip = name ? `Code runs in Perennial machine ${name}. Click to choose another.` : 'Choose the Perennial machine to run code in';
    this.#item.show();
  }
}
