import { LocalServerUnavailableError, runningServer } from '../../client/local-server-connection.ts';
import { ForeverVMError } from '../../shared/forevervm-error.ts';
import { isProcessAlive } from '../../platform/process-liveness.ts';
import { serverToken, type CliContext } from '../context.ts';

/** How often a draining node is asked whether it has stopped. */
const POLL_MS = 250;

/**
 * `perennial serve --drain`: empties a cluster's node for maintenance, the one serving the data
 * dir or the one `--server` names (a node's own URL, not a load balancer's). The node places no
 * machine on itself any more, hands each of its machines to the other nodes once the instructions
 * it was given have run, then stops; this waits until it has.
 */
export async function drainCommand(ctx: CliContext): Promise<void> {
  const node = ctx.server ? { url: ctx.server.replace(/\/+$/, ''), token: serverToken(ctx.server, ctx.dataDir) } : await runningServer(ctx.dataDir);
  if (!node) throw new LocalServerUnavailableError(`No Perennial node runs on ${ctx.dataDir}: there is nothing to drain`);
  const asked = await fetch(`${node.url}/v1/server/stop`, {
    method: 'POST',
    headers: { authorization: `Bearer ${node.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ drain: true }),
  });
  if (!asked.ok) {
    const answer = (await asked.json().catch(() => ({}))) as { code?: string; message?: string };
    throw new ForeverVMError(
      asked.status,
      answer.code ?? `HTTP${asked.status}`,
      answer.message ?? `The node at ${node.url} refused to drain (${asked.status})`,
    );
  }
  ctx.term.err.write(`Draining the node at ${node.url}: its machines go to the other nodes as their instructions end; then it stops.\n`);
  // It stops answering as it closes; on this computer, it has stopped once its process has gone.
  while ((await answers(node.url)) || ('pid' in node && isProcessAlive(node.pid))) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  ctx.term.err.write(`The node at ${node.url} has handed over its machines and stopped.\n`);
}

/** Whether the server at `url` still answers. */
async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) })).ok;
  } catch {
    return false;
  }
}
