import { resolve } from 'node:path';
import { isPackageName } from '../../shared/requests.ts';
import { ExitError } from '../errors.ts';
import { withClient, type CliContext } from '../context.ts';

export interface InstallOptions {
  requirement?: string;
  findLinks?: string;
}

/**
 * `perennial install NAME [PKG...] [-r FILE] [-f DIR]`: what was installed, on stdout. Files and
 * folders are given as paths from the current directory, which the server does not share.
 */
export async function installCommand(ctx: CliContext, name: string, packages: string[], { requirement, findLinks }: InstallOptions): Promise<void> {
  if (!packages.length && requirement === undefined)
    throw new ExitError(2, 'perennial install: name the packages to install, or a requirements file (-r FILE)');
  const specs = [
    ...packages.map((spec) => (isPackageName(spec) ? spec : resolve(spec))),
    ...(requirement === undefined ? [] : [`-r ${resolve(requirement)}`]),
    ...(findLinks === undefined ? [] : [`--find-links ${resolve(findLinks)}`]),
  ];
  const installed = await withClient(ctx, (client) => client.installPackages(name, specs));
  ctx.term.out.write(`${installed}\n`);
}
