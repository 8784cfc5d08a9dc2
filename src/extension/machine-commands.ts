import * as vscode from 'vscode';
import { PackageSpec } from '../shared/requests.ts';
import { describeRuntime } from '../shared/result-format.ts';
import type { UpgradeResult } from '../shared/types.ts';
import { COMMANDS } from './commands.ts';
import { newMachine, pickMachine } from './machine-picker.ts';
import { allSources, type MachineRef, type MachineSource, type Sources } from './machine-source.ts';
import type { CheckpointNode, MachineNode } from './machines-tree.ts';
import type { OutputPanel } from './output-panel.ts';
import { reporting } from './reporting.ts';

/**
 * The machine commands of the view and the palette: new, fork, interrupt, delete, take a
 * checkpoint, roll back, copy name, refresh.
 */
export function registerMachineCommands(sources: Sources, panel: OutputPanel, log: vscode.LogOutputChannel): vscode.Disposable {
  /** The machine a command is for: the view's item, or one given by a script, else one the user picks. */
  const target = async (given: MachineNode | MachineRef | undefined, placeHolder: string): Promise<MachineRef | undefined> => {
    if (!given) return pickMachine(sources, placeHolder);
    return 'kind' in given ? { source: given.source.id, name: given.machine.name } : given;
  };
  return vscode.Disposable.from(
    vscode.commands.registerCommand(COMMANDS.refresh, () =>
      reporting(log, 'refresh the machines', () =>
        Promise.all(allSources(sources).map(async (source) => (await source.configured()) && (await source.refresh()))),
      ),
    ),
    vscode.commands.registerCommand(COMMANDS.newMachine, () => reporting(log, 'create a machine', () => newMachine(sources))),
    vscode.commands.registerCommand(COMMANDS.deleteMachine, (node?: MachineNode | MachineRef) =>
      reporting(log, 'delete the machine', async () => {
        const machine = await target(node, 'Machine to delete');
        if (machine) await deleteMachine(sources[machine.source], machine.name);
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.interrupt, (node?: MachineNode | MachineRef) =>
      reporting(log, 'interrupt the machine', async () => {
        const machine = await target(node, 'Machine to interrupt');
        if (!machine) return;
        await (await sources[machine.source].client()).interrupt(machine.name);
        void vscode.window.setStatusBarMessage(`Perennial: interrupted ${machine.name}`, 4000);
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.forkMachine, (node?: MachineNode | MachineRef) =>
      reporting(log, 'fork the machine', async () => {
        const machine = await target(node, 'Machine to fork');
        if (!machine) return undefined;
        const source = sources[machine.source];
        const fork = await (await source.client()).fork(machine.name);
        await source.refresh();
        void vscode.window.setStatusBarMessage(`Perennial: forked ${machine.name} into ${fork.name}`, 6000);
        return { source: source.id, name: fork.name } satisfies MachineRef;
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.installPackages, (node?: MachineNode | MachineRef, packages?: string[]) =>
      reporting(log, 'install packages', async () => {
        const machine = await target(node, 'Machine to install packages into');
        const wanted = packages ?? (machine && (await askPackages(machine.name)));
        if (!machine || !wanted?.length) return undefined;
        const installed = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: `Perennial: installing ${wanted.join(', ')} into ${machine.name}` },
          async () => (await sources[machine.source].client()).installPackages(machine.name, wanted),
        );
        void vscode.window.showInformationMessage(`Installed into ${machine.name}: ${installed}`);
        return installed;
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.takeCheckpoint, (node?: MachineNode | MachineRef, label?: string) =>
      reporting(log, 'take a checkpoint', async () => {
        const machine = await target(node, 'Machine to checkpoint');
        if (!machine) return undefined;
        label ??= await vscode.window.showInputBox({
          title: `Checkpoint of ${machine.name}`,
          prompt: 'A label to roll back to it by (optional)',
          validateInput: (text) => (/^\d+$/.test(text.trim()) ? 'A label cannot be a bare number: that is how checkpoint ids look' : undefined),
        });
        if (label === undefined) return undefined;
        const source = sources[machine.source];
        const checkpoint = await (await source.client()).checkpoint(machine.name, label.trim() || undefined);
        await source.refresh();
        void vscode.window.setStatusBarMessage(`Perennial: checkpoint ${checkpoint.id} of ${machine.name}`, 6000);
        return checkpoint;
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.rollback, (node?: CheckpointNode | MachineNode | MachineRef, checkpoint?: string) =>
      reporting(log, 'roll the machine back', async () => {
        const chosen =
          node && 'kind' in node && node.kind === 'checkpoint'
            ? { source: node.source.id, name: node.machine, checkpoint: node.checkpoint.id }
            : await rollbackTarget(sources, await target(node as MachineNode | MachineRef | undefined, 'Machine to roll back'), checkpoint);
        if (chosen) await rollback(sources[chosen.source], chosen.name, chosen.checkpoint, panel);
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.upgradeMachine, (node?: MachineNode | MachineRef) =>
      reporting(log, 'upgrade the machine', async () => {
        const machine = await target(node, 'Machine to upgrade');
        return machine && upgrade(sources[machine.source], machine.name, panel);
      }),
    ),
    vscode.commands.registerCommand(COMMANDS.copyMachineName, async (node?: MachineNode | MachineRef) => {
      const machine = await target(node, 'Machine whose name to copy');
      if (machine) await vscode.env.clipboard.writeText(machine.name);
    }),
  );
}

async function deleteMachine(source: MachineSource, name: string): Promise<void> {
  if (vscode.workspace.getConfiguration('perennial').get<boolean>('confirmDelete', true)) {
    const answer = await vscode.window.showWarningMessage(
      `Delete machine ${name}? Its variables, files and history are deleted with it.`,
      { modal: true },
      'Delete',
    );
    if (answer !== 'Delete') return;
  }
  await (await source.client()).delete(name);
  await source.refresh();
}

/** The checkpoint a rollback of `machine` goes to: given by a script, else picked from the machine's list. */
async function rollbackTarget(
  sources: Sources,
  machine: MachineRef | undefined,
  given: string | undefined,
): Promise<(MachineRef & { checkpoint: string }) | undefined> {
  if (!machine) return undefined;
  if (given) return { ...machine, checkpoint: given };
  const checkpoints = (await (await sources[machine.source].client()).checkpoints(machine.name)).reverse();
  if (!checkpoints.length) {
    void vscode.window.showInformationMessage(`${machine.name} has no checkpoints yet.`);
    return undefined;
  }
  const picks = checkpoints.map((c) => ({
    label: c.label ? `${c.id} · ${c.label}` : c.id,
    description: `before #${c.seq} · ${new Date(c.at).toLocaleString()}${c.auto ? ' · auto' : ''}`,
    id: c.id,
  }));
  const pick = await vscode.window.showQuickPick(picks, { placeHolder: `Checkpoint to roll ${machine.name} back to` });
  return pick && { ...machine, checkpoint: pick.id };
}

/** Rolls back after asking (unless `perennial.confirmRollback` is off), and marks it in the output panel. */
async function rollback(source: MachineSource, name: string, checkpoint: string, panel: OutputPanel): Promise<void> {
  if (vscode.workspace.getConfiguration('perennial').get<boolean>('confirmRollback', true)) {
    const answer = await vscode.window.showWarningMessage(
      `Roll ${name} back to checkpoint ${checkpoint}? What runs is interrupted; its variables and files become what they were then. The state it leaves is kept as an automatic checkpoint.`,
      { modal: true },
      'Roll Back',
    );
    if (answer !== 'Roll Back') return;
  }
  const client = await source.client();
  const rolled = await client.rollback(name, checkpoint);
  const label = rolled.checkpoint.label ? ` ("${rolled.checkpoint.label}")` : '';
  panel.start(name, `# perennial: rollback to checkpoint ${rolled.checkpoint.id}${label}`).finish(await client.result(name, rolled.seq));
  await source.refresh();
}

/**
 * Moves a machine made on an older runtime to the newest. It is not asked first: a checkpoint keeps
 * the state before, and the message that says what was not carried offers to roll back to it.
 */
async function upgrade(source: MachineSource, name: string, panel: OutputPanel): Promise<UpgradeResult> {
  const client = await source.client();
  const upgraded = await client.upgrade(name);
  panel.start(name, `# perennial: upgrade to ${describeRuntime(upgraded.to)}`).finish(await client.result(name, upgraded.seq));
  await source.refresh();
  const lost = upgraded.lost.length ? ` Not carried: ${upgraded.lost.map((item) => item.name).join(', ')} (see the output).` : '';
  void vscode.window.showInformationMessage(`${name} now runs ${describeRuntime(upgraded.to)}.${lost}`, 'Roll Back', 'Show Output').then(async (choice) => {
    if (choice === 'Show Output') panel.show();
    if (choice === 'Roll Back') await rollback(source, name, upgraded.checkpoint.id, panel);
  });
  return upgraded;
}

/** Package names as pip takes them, asked for; undefined when the person gave none. */
async function askPackages(machine: string): Promise<string[] | undefined> {
  const text = await vscode.window.showInputBox({
    title: `Install packages into ${machine}`,
    prompt: 'Package names, separated by spaces (versions as pip takes them: pandas==2.2). Only this machine changes.',
    validateInput: (value) => {
      const bad = value
        .split(/\s+/)
        .filter(Boolean)
        .find((name) => !PackageSpec.safeParse(name).success);
      return bad ? `Not a package name: ${bad}` : undefined;
    },
  });
  return text?.split(/\s+/).filter(Boolean);
}
