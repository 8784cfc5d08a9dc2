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
import { registerTeamSignIn } from './team-sign-in.ts';

/** The extension's entry: each feature is wired from its own module in this folder. */
export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Perennial', { log: true });
  const backends = new Backends(context.secrets, log);
  const defaults = new MachineDefaults();
  const sources: Sources = {
    local: new MachineSource({ id: 'local', label: 'This computer', connect: () => backends.localClient(), configured: async () => true, log, defaults }),
    forevervm: new MachineSource({
      id: 'forevervm',
      label: 'ForeverVM',
      connect: () => backends.hostedClient(),
      configured: async () => (await backends.token()) !== undefined,
      log,
    }),
    team: new MachineSource({
      id: 'team',
      label: 'Team server',
      connect: () => backends.teamClient(),
      configured: async () => backends.teamUrl !== undefined && (await backends.teamKey()) !== undefined,
      log,
    }),
  };
  const tree = new MachinesTree(allSources(sources), {
    // This computer's root comes with its first machine; the welcome view stands in until then.
    shown: async (source) => source.id !== 'local' && (await source.configured()),
    description: (source) => (source.id === 'team' ? backends.teamUrl : undefined),
  });
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
    sources.team,
    // A new token, key or address: the remote lists start over.
    backends.onDidChange(() => {
      sources.forevervm.reset();
      sources.team.reset();
    }),
    tree,
    vscode.window.registerTreeDataProvider('perennial.machines', tree),
    registerMcpProvider(backends, defaults, cliPath),
    registerTokenCommands(backends),
    registerTeamSignIn(backends),
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
