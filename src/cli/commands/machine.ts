import { describeRuntime } from '../../shared/result-format.ts';
import { describeShares } from '../../shared/team-requests.ts';
import type { MachineInfo } from '../../shared/types.ts';
import { newMachineOptions, withClient, type CliContext, type MachineFlags } from '../context.ts';
import { ExitError } from '../errors.ts';
import { table } from '../table.ts';

export interface NewMachineCommandOptions extends MachineFlags {
  name?: string;
  tag?: Record<string, string>;
  memoryMb?: number;
}

export async function machineNewCommand(ctx: CliContext, options: NewMachineCommandOptions): Promise<void> {
  const info = await withClient(ctx, (client) =>
    client.create({ ...newMachineOptions(options), name: options.name, tags: options.tag, memoryMb: options.memoryMb }),
  );
  for (const warning of info.warnings) ctx.term.err.write(`perennial: ${warning}\n`);
  ctx.term.out.write(info.name + '\n');
}

export async function machineListCommand(ctx: CliContext, options: { tag?: Record<string, string>; json?: boolean }): Promise<void> {
  const machines = await withClient(ctx, (client) => client.list(options.tag));
  if (options.json) {
    ctx.term.out.write(JSON.stringify(machines, null, 2) + '\n');
    return;
  }
  if (!machines.length) {
    ctx.term.err.write('No machines. Create one with: perennial machine new\n');
    return;
  }
  ctx.term.out.write(formatTable(machines) + '\n');
  const older = machines.filter((m) => m.upgradeTo);
  if (older.length)
    ctx.term.err.write(
      `perennial: ${older.map((m) => m.name).join(', ')}: on an older runtime; move to ${describeRuntime(older[0]!.upgradeTo)} with: perennial machine upgrade NAME\n`,
    );
  // Each warning once, with the machines it concerns (an engine's warning holds for all of them).
  const concerned = new Map<string, string[]>();
  for (const machine of machines) for (const warning of machine.warnings) concerned.set(warning, [...(concerned.get(warning) ?? []), machine.name]);
  for (const [warning, names] of concerned) ctx.term.err.write(`perennial: ${names.join(', ')}: ${warning}\n`);
}

/** `perennial machine fork NAME`: prints the new machine's name. */
export async function machineForkCommand(ctx: CliContext, name: string, options: { tag?: Record<string, string> }): Promise<void> {
  const fork = await withClient(ctx, (client) => client.fork(name, options.tag ? { tags: options.tag } : {}));
  ctx.term.out.write(fork.name + '\n');
}

/** `perennial machine upgrade NAME`: a machine made on an older runtime moves to the newest. */
export async function machineUpgradeCommand(ctx: CliContext, name: string): Promise<void> {
  const upgraded = await withClient(ctx, (client) => client.upgrade(name));
  ctx.term.err.write(`${name} now runs ${describeRuntime(upgraded.to)}; it ran ${describeRuntime(upgraded.from)}.\n`);
  for (const item of upgraded.lost) ctx.term.err.write(`  not carried: ${item.name} (${item.reason})\n`);
  const label = upgraded.checkpoint.label ?? upgraded.checkpoint.id;
  ctx.term.err.write(`The state before is checkpoint ${upgraded.checkpoint.id}; to go back to it: perennial rollback ${name} ${label}\n`);
}

/**
 * `perennial machine rm NAME...`: deletes machines with their files. One that runs or waits to run
 * an instruction is kept, unless `force`: like `docker rm`, a busy one needs saying so.
 */
export async function machineRemoveCommand(ctx: CliContext, names: string[], options: { force?: boolean } = {}): Promise<void> {
  await withClient(ctx, async (client) => {
    const busy: string[] = [];
    for (const name of names) {
      const machine = await client.get(name);
      if (!options.force && (machine.state === 'busy' || machine.pendingInstructions > 0)) busy.push(name);
      else await client.delete(name);
    }
    if (busy.length)
      throw new ExitError(
        1,
        `perennial: ${busy.join(', ')}: running an instruction, so not removed: interrupt it first (Ctrl-C where it runs), or remove it anyway with: perennial machine rm --force ${busy.join(' ')}`,
      );
  });
}

export async function machineSwapCommand(ctx: CliContext, names: string[]): Promise<void> {
  await withClient(ctx, async (client) => {
    for (const name of names) await client.swap(name);
  });
}

/** "Pyodide 0.29.0 (Python 3.13.2)*" where an upgrade is available; "-" while not known. */
function runtimeCell(machine: MachineInfo): string {
  if (!machine.runtime) return '-';
  return `${describeRuntime(machine.runtime)}${machine.upgradeTo ? '*' : ''}`;
}

/**
 * The machines, one a line; in a cluster, with the node that runs each ("-": none now, the next
 * use takes it); where any works in a folder of the person's (a notebook's), that folder ("-": its own).
 */
/** Whom a machine is shared with (its owner sees), or what it is shared with the caller for. */
function sharedCell(machine: MachineInfo): string {
  const access = machine.access;
  if (!access) return '-';
  if (access.right !== 'own') return `with you (${access.right})`;
  return describeShares(access.shares) || '-';
}

function formatTable(machines: MachineInfo[]): string {
  const cluster = machines.some((m) => m.node !== undefined);
  const folders = machines.some((m) => m.workdir !== undefined);
  // A team's server: whose each machine is, and (its owner's) whom it is shared with.
  const team = machines.some((m) => m.access !== undefined);
  return table([
    [
      'NAME',
      'ENGINE',
      'RUNTIME',
      'STATE',
      'INSTRUCTIONS',
      ...(cluster ? ['NODE'] : []),
      ...(folders ? ['WORKS IN'] : []),
      ...(team ? ['OWNER', 'SHARED'] : []),
      'CREATED',
      'TAGS',
    ],
    ...machines.map((m) => [
      m.name,
      m.engine,
      runtimeCell(m),
      m.state,
      String(m.nextSeq),
      ...(cluster ? [m.node ?? '-'] : []),
      ...(folders ? [m.workdir ?? '-'] : []),
      ...(team ? [m.access?.owner ?? '-', sharedCell(m)] : []),
      m.createdAt.replace('T', ' ').slice(0, 19),
      Object.entries(m.tags)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    ]),
  ]);
}
