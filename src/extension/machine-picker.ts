import { CONFINED_ENGINE, engineDescriptor, ENGINES } from '../engines/descriptors.ts';
import * as vscode from 'vscode';
import type { NewMachineOptions } from '../shared/requests.ts';
import type { MachineInfo } from '../shared/types.ts';
import { COMMANDS } from './commands.ts';
import type { MachineDefaults } from './machine-defaults.ts';
import { allSources, isSourceId, type MachineRef, type MachineSource, type Sources } from './machine-source.ts';

/*
 * Which machine, asked of the person: one of every backend's, or a new one (its engine, a python
 * machine's interpreter, its tags), for the commands, the active machine and the notebook kernel.
 */

/** One of the machines, picked; none when there are none (which says so, offering New Machine). */
export async function pickMachine(sources: Sources, placeHolder: string): Promise<MachineRef | undefined> {
  const picks = await machinePicks(sources);
  if (!picks.length) {
    void vscode.window
      .showInformationMessage('There are no machines yet.', 'New Machine')
      .then((choice) => choice && vscode.commands.executeCommand(COMMANDS.newMachine));
    return undefined;
  }
  return (await vscode.window.showQuickPick(picks, { placeHolder }))?.ref;
}

/** Asks for one of the machines or a new one (made with `newMachine`, working in `workdir` when given). */
export async function chooseMachine(sources: Sources, title: string, placeHolder: string, workdir?: string): Promise<MachineRef | undefined> {
  const create = { label: '$(add) New Machine…', ref: undefined };
  const picked = await vscode.window.showQuickPick([...(await machinePicks(sources)), create], { title, placeHolder });
  if (!picked) return undefined;
  return picked.ref ?? newMachine(sources, workdir);
}

/** Every backend's machines as quick-pick items; a backend that cannot be reached lists none. */
async function machinePicks(sources: Sources): Promise<Array<vscode.QuickPickItem & { ref: MachineRef }>> {
  const lists = await Promise.all(
    allSources(sources).map(async (source) => (await source.list().catch((): MachineInfo[] => [])).map((machine) => machinePick(source, machine))),
  );
  return lists.flat();
}

function machinePick(source: MachineSource, machine: MachineInfo): vscode.QuickPickItem & { ref: MachineRef } {
  const details = [...Object.entries(machine.tags).map(([k, v]) => `${k}=${v}`), machine.engine, machine.state];
  return { label: machine.name, description: details.join(' · '), ref: { source: source.id, name: machine.name } };
}

/**
 * Creates a machine on the backend `perennial.backend` names: asks for the engine (local only,
 * the person's first), a python machine's interpreter, and tags, and returns the new machine. One
 * made to run an editor's code (`workdir`: the file's workspace folder) works there.
 */
export async function newMachine(sources: Sources, workdir?: string): Promise<MachineRef | undefined> {
  const source = activeSource(sources);
  let options = await madeWith(source);
  if (source.defaults) {
    const preferred = source.defaults.personsEngine;
    const engines = ENGINES.map(({ name, summary }) => ({ label: name, detail: summary[0]!.toUpperCase() + summary.slice(1) })).sort((a) =>
      a.label === preferred ? -1 : 1,
    );
    const engine = await vscode.window.showQuickPick(engines, { title: 'New Perennial machine', placeHolder: 'Engine' });
    if (!engine) return undefined;
    options = await source.defaults.of(engine.label, workdir);
    if (engineDescriptor(engine.label).takes.python) {
      const python = await pickInterpreter(source.defaults);
      if (python === undefined) return undefined;
      options = { ...options, python };
    }
  }
  const tagText = await vscode.window.showInputBox({
    title: `New Perennial machine (${source.label})`,
    prompt: 'Tags (optional), e.g. project=demo, owner=me',
    validateInput: (text) => (parseTags(text) ? undefined : 'Write tags as key=value, separated by commas'),
  });
  if (tagText === undefined) return undefined;
  return create(source, { ...options, tags: parseTags(tagText)! });
}

/** A machine on the active backend with the engine `perennial.defaultEngine` names, asking nothing. */
export async function createDefaultMachine(sources: Sources, tags: Record<string, string>): Promise<MachineRef> {
  const source = activeSource(sources);
  return create(source, { ...(await madeWith(source)), tags });
}

/**
 * What a machine made on `source` without questions is made with: the settings' defaults on this
 * computer; on a team server a sandbox (people make no other there); hosted ForeverVM chooses.
 */
async function madeWith(source: MachineSource): Promise<NewMachineOptions> {
  if (source.defaults) return source.defaults.of();
  return source.id === 'team' ? { engine: CONFINED_ENGINE } : {};
}

/**
 * Asks which interpreter a python machine runs, the default first (every interpreter the
 * settings, the Python extension and the PATH know, or one browsed to); undefined when the person
 * gave up.
 */
async function pickInterpreter(defaults: MachineDefaults): Promise<string | undefined> {
  const known = await defaults.interpreters();
  const browse = { label: '$(folder-opened) Browse…', detail: 'An interpreter elsewhere on this computer', path: undefined };
  const picked = await vscode.window.showQuickPick([...known.map(({ path, detail }) => ({ label: path, detail, path })), browse], {
    title: 'New Perennial machine: its Python',
    placeHolder: known.length ? 'The interpreter it runs, with its packages' : 'No interpreter found: browse to one',
  });
  if (!picked) return undefined;
  if (picked.path) return picked.path;
  const [file] = (await vscode.window.showOpenDialog({ title: 'Python interpreter', canSelectMany: false, openLabel: 'Use this Python' })) ?? [];
  return file?.fsPath;
}

/** The backend `perennial.backend` names. */
function activeSource(sources: Sources): MachineSource {
  const backend = vscode.workspace.getConfiguration('perennial').get<string>('backend');
  return isSourceId(backend) ? sources[backend] : sources.local;
}

async function create(source: MachineSource, options: NewMachineOptions): Promise<MachineRef> {
  const { name } = await (await source.client()).create(options);
  await source.refresh();
  return { source: source.id, name };
}

/** `k=v, k2=v2` as tags; null when malformed. */
function parseTags(text: string): Record<string, string> | null {
  const tags: Record<string, string> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([^=\s]+)\s*=\s*(.*)$/.exec(part);
    if (!match) return null;
    tags[match[1]!] = match[2]!;
  }
  return tags;
}
