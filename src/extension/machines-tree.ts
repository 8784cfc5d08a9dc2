import * as vscode from 'vscode';
import { describeRuntime } from '../shared/result-format.ts';
import { byteSize } from '../shared/byte-size.ts';
import type { CheckpointInfo, MachineAccess, MachineInfo, VariableSummary } from '../shared/types.ts';
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
const BACKEND_ICONS: Record<MachineSource['id'], string> = { local: 'server', forevervm: 'cloud', team: 'organization' };

/** What the view asks of the backends beyond their machines. */
export interface Roots {
  /** Whether a backend gets a root even with no machines (hosted: with a token; a team server: signed in). */
  shown(source: MachineSource): Promise<boolean>;
  /** What its root says beside its name (a team server: its address). */
  description(source: MachineSource): string | undefined;
}

/**
 * The Machines view: one root per backend, its machines (tags and state as the description, an
 * icon per state, details in the tooltip; on a team server, whose a machine is and whom it is
 * shared with), and under each machine its checkpoints (hosted ForeverVM has none), newest first,
 * and its variables. It follows the Perennial servers' events, so instructions run from anywhere
 * (Copilot included) show up live.
 */
export class MachinesTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  readonly #changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.#changed.event;
  readonly #subscriptions: vscode.Disposable[];

  constructor(
    private readonly sources: MachineSource[],
    private readonly roots: Roots,
  ) {
    this.#subscriptions = sources.map((source) => source.onDidChange(() => this.#changed.fire(undefined)));
  }

  async getChildren(node?: Node): Promise<Node[]> {
    if (!node) {
      // No backend to show: an empty tree shows the welcome view instead.
      const roots = await Promise.all(
        this.sources.map(async (source) =>
          (await this.roots.shown(source)) || (await source.list().catch((): MachineInfo[] => [])).length ? source : undefined,
        ),
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
        const checkpoints: Node[] = node.source.id !== 'forevervm' ? [{ kind: 'checkpoints', source: node.source, machine: node.machine.name }] : [];
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
        item.description = this.roots.description(node.source);
        item.iconPath = new vscode.ThemeIcon(BACKEND_ICONS[node.source.id]);
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
  const { access } = machine;
  const shared = access ? sharing(access) : undefined;
  item.description = [
    ...(shared ? [shared.short] : []),
    ...tags,
    machine.state,
    ...(machine.upgradeTo ? [`${describeRuntime(machine.runtime)}, upgrade available`] : []),
  ].join(' · ');
  item.iconPath = new vscode.ThemeIcon(STATE_ICONS[machine.state]);
  // `machine-upgradable` also matches the menus' `viewItem =~ /^machine/` (what an owner may do);
  // `shared-read` and `shared-run` get only what the share allows.
  item.contextValue = access && access.right !== 'own' ? `shared-${access.right}` : machine.upgradeTo ? 'machine-upgradable' : 'machine';
  const tooltip = new vscode.MarkdownString(`**${machine.name}** — ${machine.state}\n\n`);
  if (shared) tooltip.appendMarkdown(`- ${shared.long}\n`);
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

/** How a team server's machine is shared, as the row says it and as its tooltip does; none for an owner's unshared machine. */
function sharing({ owner, right, shares }: MachineAccess): { short: string; long: string } | undefined {
  if (right !== 'own') {
    const may = right === 'run' ? 'you may read it and run code on it' : 'you may read it';
    return { short: `${owner}'s, ${right === 'run' ? 'shared to run' : 'shared to read'}`, long: `${owner}'s machine, shared with you: ${may}` };
  }
  if (!shares.length) return undefined;
  const whom = shares.map((share) => `${share.with} (${share.right})`).join(', ');
  return { short: `shared with ${shares.map((share) => share.with).join(', ')}`, long: `yours, shared with ${whom}` };
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
