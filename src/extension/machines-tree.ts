import * as vscode from 'vscode';
import { describeRuntime } from '../shared/result-format.ts';
import { byteSize } from '../shared/byte-size.ts';
import type { CheckpointInfo, MachineInfo, VariableSummary } from '../shared/types.ts';
import type { MachineSource } from './machine-source.ts';

export type MachineNode = { kind: 'machine'; source: MachineSource; machine: MachineInfo };
export type CheckpointNode = { kind: 'checkpoint'; source: MachineSource; machine: string; checkpoint: CheckpointInfo };
type Node =
  | { kind: 'backend'; source: MachineSource }
  | MachineNode
  | { kind: 'checkpoints'; source: MachineSource; machine: string }
  | CheckpointNode
  | { kind: 'variable'; variable: VariableSummary }
  | { kind: 'notice'; text: string };

const STATE_ICONS: Record<MachineInfo['state'], string> = { warm: 'vm-running', busy: 'loading~spin', swapped: 'archive' };

/**
 * The Machines view: one root per backend, its machines (tags and state as the description, an
 * icon per state, details in the tooltip), and under each machine its checkpoints (local machines:
 * hosted ForeverVM has none), newest first, and its variables. It follows the
 * local server's events, so instructions run from anywhere (Copilot included) show up live.
 */
export class MachinesTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  readonly #changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.#changed.event;
  readonly #subscriptions: vscode.Disposable[];

  /** `shown(source)` says whether a backend gets a root even with no machines (hosted: with a token). */
  constructor(
    private readonly sources: MachineSource[],
    private readonly shown: (source: MachineSource) => Promise<boolean>,
  ) {
    this.#subscriptions = sources.map((source) => source.onDidChange(() => this.#changed.fire(undefined)));
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (!node) {
      // No backend to show: an empty tree shows the welcome view instead.
      const roots = await Promise.all(
        this.sources.map(async (source) => ((await this.shown(source)) || (await source.list().catch((): MachineInfo[] => [])).length ? source : undefined)),
      );
      return roots.filter((source) => source !== undefined).map((source) => ({ kind: 'backend', source }));
    }
    try {
      if (node.kind === 'backend') {
        const machines = await node.source.list();
        return machines.length ? machines.map((machine) => ({ kind: 'machine', source: node.source, machine })) : [{ kind: 'notice', text: 'no machines' }];
      }
      if (node.kind === 'machine') {
        const variables = await node.source.variables(node.machine.name);
        const checkpoints: Node[] = node.source.id === 'local' ? [{ kind: 'checkpoints', source: node.source, machine: node.machine.name }] : [];
        return [
          ...checkpoints,
          ...(variables.length ? variables.map((variable): Node => ({ kind: 'variable', variable })) : [{ kind: 'notice', text: 'no variables yet' } as const]),
        ];
      }
      if (node.kind === 'checkpoints') {
        const checkpoints = await (await node.source.client()).checkpoints(node.machine);
        return checkpoints.length
          ? checkpoints.reverse().map((checkpoint) => ({ kind: 'checkpoint', source: node.source, machine: node.machine, checkpoint }))
          : [{ kind: 'notice', text: 'no checkpoints yet' }];
      }
    } catch (error) {
      return [{ kind: 'notice', text: `unavailable: ${(error as Error).message}` }];
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'backend': {
        const item = new vscode.TreeItem(node.source.label, vscode.TreeItemCollapsibleState.Expanded);
        item.id = node.source.id;
        item.iconPath = new vscode.ThemeIcon(node.source.id === 'local' ? 'server' : 'cloud');
        item.contextValue = 'backend';
        return item;
      }
      case 'machine':
        return machineItem(node);
      case 'checkpoints': {
        const item = new vscode.TreeItem('Checkpoints', vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `${node.source.id}/${node.machine}/checkpoints`;
        item.iconPath = new vscode.ThemeIcon('history');
        item.contextValue = 'checkpoints';
        return item;
      }
      case 'checkpoint':
        return checkpointItem(node);
      case 'variable': {
        const { name, type, repr } = node.variable;
        const item = new vscode.TreeItem(`${name}: ${type} = ${repr}`);
        item.tooltip = new vscode.MarkdownString().appendCodeblock(`${name}: ${type} = ${repr}`, 'python');
        item.iconPath = new vscode.ThemeIcon('symbol-variable');
        item.contextValue = 'variable';
        return item;
      }
      case 'notice': {
        const item = new vscode.TreeItem(node.text);
        item.contextValue = 'notice';
        return item;
      }
    }
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
    this.#changed.dispose();
  }
}

function machineItem({ source, machine }: MachineNode): vscode.TreeItem {
  const item = new vscode.TreeItem(machine.name, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `${source.id}/${machine.name}`;
  const tags = Object.entries(machine.tags).map(([key, value]) => `${key}=${value}`);
  item.description = [...tags, machine.state, ...(machine.upgradeTo ? [`${describeRuntime(machine.runtime)}, upgrade available`] : [])].join(' · ');
  item.iconPath = new vscode.ThemeIcon(STATE_ICONS[machine.state]);
  // `machine-upgradable` also matches the menus' `viewItem =~ /^machine/`.
  item.contextValue = machine.upgradeTo ? 'machine-upgradable' : 'machine';
  const tooltip = new vscode.MarkdownString(`**${machine.name}** — ${machine.state}\n\n`);
  tooltip.appendMarkdown(`- engine: ${machine.engine}\n- created: ${new Date(machine.createdAt).toLocaleString()}\n`);
  // Absent from what a server of a build before 0.2.0 says.
  if (machine.runtime)
    tooltip.appendMarkdown(
      `- runtime: ${describeRuntime(machine.runtime)}${machine.upgradeTo ? ` (${describeRuntime(machine.upgradeTo)} available: Upgrade Machine)` : ''}\n`,
    );
  // Absent: a folder of the machine's own.
  if (machine.workdir) tooltip.appendMarkdown(`- works in: ${machine.workdir}\n`);
  if (machine.memoryMb) tooltip.appendMarkdown(`- memory cap: ${machine.memoryMb} MiB\n`);
  if (machine.snapshot) tooltip.appendMarkdown(`- last snapshot: ${(machine.snapshot.bytes / 1024).toFixed(0)} KiB\n`);
  for (const warning of machine.warnings) tooltip.appendMarkdown(`\n⚠ ${warning}\n`);
  item.tooltip = tooltip;
  return item;
}

function checkpointItem({ source, machine, checkpoint }: CheckpointNode): vscode.TreeItem {
  const item = new vscode.TreeItem(checkpoint.label ? `${checkpoint.id} · ${checkpoint.label}` : checkpoint.id);
  item.id = `${source.id}/${machine}/checkpoints/${checkpoint.id}`;
  item.description = [
    `before #${checkpoint.seq}`,
    new Date(checkpoint.at).toLocaleTimeString(),
    byteSize(checkpoint.bytes),
    ...(checkpoint.auto ? ['auto'] : []),
  ].join(' · ');
  item.tooltip = `Checkpoint ${checkpoint.id}${checkpoint.label ? ` "${checkpoint.label}"` : ''} of ${machine}: the state before instruction ${checkpoint.seq}, ${checkpoint.auto ? 'saved automatically' : 'taken'} at ${new Date(checkpoint.at).toLocaleString()}`;
  item.iconPath = new vscode.ThemeIcon(checkpoint.auto ? 'circle-outline' : 'bookmark');
  item.contextValue = 'checkpoint';
  return item;
}
