import { byteSize } from '../../shared/byte-size.ts';
import type { CheckpointInfo } from '../../shared/types.ts';
import { withClient, type CliContext } from '../context.ts';
import { table } from '../table.ts';

/** `perennial checkpoint NAME [--label L]`: prints the checkpoint's id. */
export async function checkpointCommand(ctx: CliContext, name: string, options: { label?: string }): Promise<void> {
  const checkpoint = await withClient(ctx, (client) => client.checkpoint(name, options.label));
  ctx.term.out.write(checkpoint.id + '\n');
}

/** `perennial checkpoints NAME`: the machine's checkpoints, oldest first. */
export async function checkpointsCommand(ctx: CliContext, name: string, options: { json?: boolean }): Promise<void> {
  const checkpoints = await withClient(ctx, (client) => client.checkpoints(name));
  if (options.json) {
    ctx.term.out.write(JSON.stringify(checkpoints, null, 2) + '\n');
    return;
  }
  if (!checkpoints.length) {
    ctx.term.err.write(`No checkpoints yet. Take one with: perennial checkpoint ${name}\n`);
    return;
  }
  ctx.term.out.write(table([['ID', 'LABEL', 'BEFORE', 'TAKEN', 'SIZE', 'KIND'], ...checkpoints.map(row)]) + '\n');
}

/** `perennial rollback NAME CHECKPOINT`: the machine returns to the checkpoint (id or label). */
export async function rollbackCommand(ctx: CliContext, name: string, checkpoint: string): Promise<void> {
  const rolled = await withClient(ctx, (client) => client.rollback(name, checkpoint));
  const label = rolled.checkpoint.label ? ` ("${rolled.checkpoint.label}")` : '';
  ctx.term.err.write(
    `${name} is back at checkpoint ${rolled.checkpoint.id}${label}, taken before instruction ${rolled.checkpoint.seq}; the state it left is kept as an automatic checkpoint (perennial checkpoints ${name}).\n`,
  );
  for (const note of rolled.notes ?? []) ctx.term.err.write(`perennial: ${note}\n`);
}

function row(checkpoint: CheckpointInfo): string[] {
  return [
    checkpoint.id,
    checkpoint.label ?? '',
    `#${checkpoint.seq}`,
    checkpoint.at.replace('T', ' ').slice(0, 19),
    byteSize(checkpoint.bytes),
    checkpoint.auto ? 'auto' : 'taken',
  ];
}
