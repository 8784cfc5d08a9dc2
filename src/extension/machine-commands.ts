import * as vscode from 'vscode';
import type { NewMachine } from '../client/forevervm-client.ts';
import type { MachineInfo } from '../shared/types.ts';
import type { LocalMachines } from './local-machines.ts';
import type { MachineNode } from './machines-tree.ts';

/** The machine commands of the view and the palette: new, interrupt, delete, copy name, refresh. */
export function registerMachineCommands(local: LocalMachines, log: vscode.LogOutputChannel): vscode.Disposable {
  return vscode.Disposable.from(
    vscode.commands.registerCommand('perennial.refresh', () => reporting(log, 'refresh the machines', () => local.refresh())),
    vscode.commands.registerCommand('perennial.newMachine', () => reporting(log, 'create a machine', () => newMachine(local))),
    vscode.commands.registerCommand('perennial.deleteMachine', (node?: MachineNode) => reporting(log, 'delete the machine', () => deleteMachine(local, node))),
    vscode.commands.registerCommand('perennial.interrupt', (node?: MachineNode) => reporting(log, 'interrupt the machine', () => interrupt(local, node))),
    vscode.commands.registerCommand('perennial.copyMachineName', async (node?: MachineNode) => {
      const name = node?.machine.name ?? (await pickMachine(local, 'Machine whose name to copy'));
      if (name) await vscode.env.clipboard.writeText(name);
    }),
  );
}

/** Runs a command's work; a failure becomes a notification with a way to the details. */
export async function reporting<T>(log: vscode.LogOutputChannel, what: string, work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    log.error(`could not ${what}: ${(error as Error).stack ?? error}`);
    const choice = await vscode.window.showErrorMessage(`Perennial could not ${what}: ${(error as Error).message}`, 'Show Log');
    if (choice) log.show();
    return undefined;
  }
}

export async function pickMachine(local: LocalMachines, placeHolder: string): Promise<string | undefined> {
  const machines = await local.list();
  if (!machines.length) {
    void vscode.window.showInformationMessage('There are no machines yet.', 'New Machine').then((choice) => choice && vscode.commands.executeCommand('perennial.newMachine'));
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(machines.map(machinePick), { placeHolder });
  return picked?.name;
}

/** A machine as a quick-pick item: its name, then tags, engine and state. */
export function machinePick(machine: MachineInfo): vscode.QuickPickItem & { name: string } {
  return { label: machine.name, description: [...Object.entries(machine.tags).map(([k, v]) => `${k}=${v}`), machine.engine, machine.state].join(' · '), name: machine.name };
}

/** Asks for the engine (and tags), creates the machine, and returns its name. */
export async function newMachine(local: LocalMachines): Promise<string | undefined> {
  const settings = vscode.workspace.getConfiguration('perennial');
  const preferred = settings.get<string>('defaultEngine') === 'python' ? 'python' : 'sandbox';
  const engines = [
    { label: 'sandbox', detail: 'Pyodide in a locked-down process: isolated, swapped with exact memory snapshots' },
    { label: 'python', detail: 'Your own Python interpreter: your packages, native speed, not isolated' },
  ].sort((a) => (a.label === preferred ? -1 : 1));
  const engine = await vscode.window.showQuickPick(engines, { title: 'New Perennial machine', placeHolder: 'Engine' });
  if (!engine) return undefined;
  const tagText = await vscode.window.showInputBox({
    title: 'New Perennial machine',
    prompt: 'Tags (optional), e.g. project=demo, owner=me',
    validateInput: (text) => (parseTags(text) ? undefined : 'Write tags as key=value, separated by commas'),
  });
  if (tagText === undefined) return undefined;
  const options: NewMachine = { engine: engine.label, tags: parseTags(tagText)! };
  if (engine.label === 'python') options.python = await pythonPath();
  else Object.assign(options, sandboxOptions());
  const name = await (await local.client()).createMachine(options);
  await local.refresh();
  return name;
}

/** Stops what the machine runs (KeyboardInterrupt) and cancels what waits for it. */
async function interrupt(local: LocalMachines, node?: MachineNode): Promise<void> {
  const name = node?.machine.name ?? (await pickMachine(local, 'Machine to interrupt'));
  if (!name) return;
  const { cancelled, interrupted } = await (await local.client()).interrupt(name);
  const what = interrupted ? `interrupted${cancelled ? `, ${cancelled} waiting instruction(s) cancelled` : ''}` : 'was not running anything';
  void vscode.window.setStatusBarMessage(`Perennial: ${name} ${what}`, 4000);
}

async function deleteMachine(local: LocalMachines, node?: MachineNode): Promise<void> {
  const name = node?.machine.name ?? (await pickMachine(local, 'Machine to delete'));
  if (!name) return;
  if (vscode.workspace.getConfiguration('perennial').get<boolean>('confirmDelete', true)) {
    const answer = await vscode.window.showWarningMessage(`Delete machine ${name}? Its variables, files and history are deleted with it.`, { modal: true }, 'Delete');
    if (answer !== 'Delete') return;
  }
  await (await local.client()).deleteMachine(name);
  await local.refresh();
}

/** `k=v, k2=v2` as tags; null when malformed. */
function parseTags(text: string): Record<string, string> | null {
  const tags: Record<string, string> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const match = /^([^=\s]+)\s*=\s*(.*)$/.exec(part);
    if (!match) return null;
    tags[match[1]!] = match[2]!;
  }
  return tags;
}

/** `perennial.pythonPath`, else the Python extension's interpreter for this workspace, else python3. */
async function pythonPath(): Promise<string> {
  const configured = vscode.workspace.getConfiguration('perennial').get<string>('pythonPath');
  if (configured) return configured;
  try {
    const python = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
    const api = python && (python.isActive ? python.exports : await python.activate());
    const active = api?.environments.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    if (active?.path) return active.path;
  } catch {
    // The Python extension is missing or has no interpreter selected.
  }
  return 'python3';
}

interface PythonExtensionApi {
  environments: { getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } };
}

/** The sandbox's network and workspace access, from the settings. */
function sandboxOptions(): Pick<NewMachine, 'network' | 'workspace' | 'workspace_writable'> {
  const settings = vscode.workspace.getConfiguration('perennial.sandbox');
  const access = settings.get<string>('workspaceAccess', 'read');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  return {
    network: settings.get<boolean>('network', false),
    ...(access !== 'none' && folder?.scheme === 'file' ? { workspace: folder.fsPath, workspace_writable: access === 'readwrite' } : {}),
  };
}
