import * as vscode from 'vscode';
import { ActiveMachine } from './active-machine.ts';
import { Backends } from './backends.ts';
import { registerTokenCommand } from './forevervm-token.ts';
import { LocalMachines } from './local-machines.ts';
import { registerMachineCommands } from './machine-commands.ts';
import { MachinesTree } from './machines-tree.ts';
import { registerMcpProvider } from './mcp-provider.ts';
import { OutputPanel } from './output-panel.ts';
import { registerRunCommands } from './run-code.ts';

/** The extension's entry: each feature is wired from its own module in this folder. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Perennial', { log: true });
  const backends = new Backends(context.secrets, log);
  const local = new LocalMachines(backends, log);
  const tree = new MachinesTree(local);
  const active = new ActiveMachine(context.workspaceState, local);
  const panel = new OutputPanel(vscode.Uri.joinPath(context.extensionUri, 'media', 'perennial.svg'));
  const cliPath = vscode.Uri.joinPath(context.extensionUri, 'dist', 'cli.js').fsPath;
  context.subscriptions.push(
    log,
    backends,
    local,
    tree,
    vscode.window.registerTreeDataProvider('perennial.machines', tree),
    registerMcpProvider(backends, cliPath),
    registerTokenCommand(backends),
    active,
    panel,
    registerMachineCommands(local, log),
    registerRunCommands(local, active, panel, log),
  );
  log.info(`Perennial activated; backend ${backends.active}`);
}

export function deactivate(): void {}
