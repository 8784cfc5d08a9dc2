import * as vscode from 'vscode';
import { ActiveMachine } from './active-machine.ts';
import { Backends } from './backends.ts';
import { registerTokenCommands } from './forevervm-token.ts';
import { MachineDefaults } from './machine-defaults.ts';
import { allSources, MachineSource, type Sources } from './machine-source.ts';
import { registerMachineCommands } from './machine-commands.ts';
import { registerLiveCompletion } from './live-completion.ts';
import { MachinesTree } from './machines-tree.ts';
import { registerMcpProvider } from './mcp-provider.ts';
import { NotebookKernel } from './notebook-kernel.ts';
import { OutputPanel } from './output-panel.ts';
import { registerRunCommands } from './run-code.ts';

/** The extension's entry: each feature is wired from its own module in this folder. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Perennial', { log: true });
  const backends = new Backends(context.secrets, log);
  const defaults = new MachineDefaults();
  const sources: Sources = {
    local: new MachineSource('local', 'This computer', () => backends.localClient(), log, defaults),
    forevervm: new MachineSource('forevervm', 'ForeverVM', () => backends.hostedClient(), log),
  };
  const tree = new MachinesTree(allSources(sources), async (source) => source.id === 'forevervm' && (await backends.token()) !== undefined);
  const active = new ActiveMachine(context.workspaceState, sources);
  const panel = new OutputPanel(vscode.Uri.joinPath(context.extensionUri, 'media', 'perennial.svg'));
  const notebooks = new NotebookKernel(sources, context.workspaceState, log);
  const cliPath = vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath;
  context.subscriptions.push(
    log,
    backends,
    defaults,
    sources.local,
    sources.forevervm,
    // A new token or address: the hosted list starts over.
    backends.onDidChange(() => sources.forevervm.reset()),
    tree,
    vscode.window.registerTreeDataProvider('perennial.machines', tree),
    registerMcpProvider(backends, defaults, cliPath),
    registerTokenCommands(backends),
    active,
    panel,
    registerMachineCommands(sources, panel, log),
    registerRunCommands(sources, active, panel, log),
    notebooks,
    registerLiveCompletion(sources, active, notebooks),
  );
  log.info(`Perennial activated; backend ${backends.active}`);
}

export function deactivate(): void {}
