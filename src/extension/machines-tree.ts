import * as vscode from 'vscode';
import type { MachineInfo, VariableSummary } from '../shared/types.ts';
import type { LocalMachines } from './local-machines.ts';

export type MachineNode = { kind: 'machine'; machine: MachineInfo };
type Node = { kind: 'backend'; label: string } | MachineNode | { kind: 'variable'; variable: VariableSummary } | { kind: 'notice'; text: string };

const STATE_ICONS: Record<MachineInfo['state'], string> = { warm: 'vm-running', busy: 'loading~spin', swapped: 'archive' };

/**
 * The Machines view: one root per backend, its machines (tags and state as the description, an
 * icon per state, details in the tooltip), and under each machine its variables. It follows the
 * server's events, so instructions run from anywhere (Copilot included) show up live.
 */
export class MachinesTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  readonly #changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.#changed.event;
  readonly #subscription: vscode.Disposable;

  constructor(private readonly local: LocalMachines) {
    this.#subscription = local.onDidChange(() => this.#changed.fire(undefined));
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (!node) {
      // No machines anywhere: an empty tree shows the welcome view instead.
      return (await this.local.list()).length ? [{ kind: 'backend', label: 'This computer' }] : [];
    }
    if (node.kind === 'backend') return (await this.local.list()).map((machine) => ({ kind: 'machine', machine }));
    if (node.kind === 'machine') {
      try {
        const variables = await this.local.variables(node.machine.name);
        return variables.length ? variables.map((variable) => ({ kind: 'variable', variable })) : [{ kind: 'notice', text: 'no variables yet' }];
      } catch (error) {
        return [{ kind: 'notice', text: `variables unavailable: ${(error as Error).message}` }];
      }
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'backend': {
        const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
        item.iconPath = new vscode.ThemeIcon('server');
        item.contextValue = 'backend';
        return item;
      }
      case 'machine':
        return machineItem(node.machine);
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
    this.#subscription.dispose();
    this.#changed.dispose();
  }
}

function machineItem(machine: MachineInfo): vscode.TreeItem {
  const item = new vscode.TreeItem(machine.name, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `local/${machine.name}`;
  const tags = Object.entries(machine.tags).map(([key, value]) => `${key}=${value}`);
  item.description = [...tags, machine.state].join(' · ');
  item.iconPath = new vscode.ThemeIcon(STATE_ICONS[machine.state]);
  item.contextValue = 'machine';
  const tooltip = new vscode.MarkdownString(`**${machine.name}** — ${machine.state}\n\n`);
  tooltip.appendMarkdown(`- engine: ${machine.engine}\n- created: ${new Date(machine.createdAt).toLocaleString()}\n- memory cap: ${machine.memoryMb} MiB\n`);
  if (machine.snapshot) tooltip.appendMarkdown(`- last snapshot: ${(machine.snapshot.bytes / 1024).toFixed(0)} KiB\n`);
  for (const warning of machine.warnings) tooltip.appendMarkdown(`\n⚠ ${warning}\n`);
  item.tooltip = tooltip;
  return item;
}
