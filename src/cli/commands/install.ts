import { withClient, type CliContext } from '../context.ts';

/** `perennial install NAME PKG...`: what was installed, on stdout. */
export async function installCommand(ctx: CliContext, name: string, packages: string[]): Promise<void> {
  const installed = await withClient(ctx, (client) => client.installPackages(name, packages));
  ctx.term.out.write(`${installed}\n`);
}
