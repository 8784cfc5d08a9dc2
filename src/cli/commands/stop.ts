import { stopLocalServer } from '../../client/local-server-connection.ts';
import type { CliContext } from '../context.ts';

/** `perennial stop`: stops the local server of the data dir, which saves every machine first. */
export async function stopCommand(ctx: CliContext): Promise<void> {
  const stopped = await stopLocalServer(ctx.dataDir);
  ctx.term.err.write(
    stopped
      ? `Stopped the Perennial server of ${ctx.dataDir} (pid ${stopped.pid}, ${stopped.url}); its machines are saved. The next command starts one again.\n`
      : `No Perennial server runs on ${ctx.dataDir}.\n`,
  );
}
