import { hostedClient } from '../../client/forevervm-config.ts';
import { connectToLocalServer, runningServer } from '../../client/local-server-connection.ts';
import type { ClusterStatus } from '../../shared/types.ts';
import type { CliContext } from '../context.ts';

/** `perennial status`: the server (or the hosted account) and its machines; never starts a server. */
export async function statusCommand(ctx: CliContext, options: { json?: boolean }): Promise<void> {
  if (ctx.backend === 'forevervm') {
    const client = await hostedClient();
    const who = await client.whoami();
    const report = { backend: 'forevervm', url: client.baseUrl, account: who.account, machines: (await client.list()).length };
    ctx.term.out.write(
      options.json ? JSON.stringify(report, null, 2) + '\n' : `ForeverVM at ${report.url}, account ${report.account}, ${report.machines} machines\n`,
    );
    return;
  }
  const info = ctx.server ? { url: ctx.server } : await runningServer(ctx.dataDir);
  if (!info) {
    if (options.json) ctx.term.out.write(JSON.stringify({ backend: 'local', running: false, dataDir: ctx.dataDir }, null, 2) + '\n');
    else ctx.term.out.write(`No Perennial server runs on ${ctx.dataDir} (the first command that needs one starts it).\n`);
    return;
  }
  const client = ctx.server ? await ctx.openClient() : await connectToLocalServer(ctx.dataDir, { autoStart: false });
  const status = await client.status().finally(() => client.close());
  if (options.json) {
    ctx.term.out.write(JSON.stringify({ backend: ctx.server ? 'server' : 'local', running: true, url: info.url, ...status }, null, 2) + '\n');
    return;
  }
  const lines = [
    `Perennial ${status.version} server, pid ${status.pid}, at ${info.url}`,
    `data dir: ${status.dataDir}`,
    `machines: ${status.machines.total} (${status.machines.warm} warm, ${status.machines.swapped} swapped)${status.cluster ? ' on this node' : ''}`,
    // Absent from the report of a server of a build before 0.2.0.
    ...(status.machines.upgradable
      ? [`  ${status.machines.upgradable} on an older runtime: see perennial machine list, and perennial machine upgrade NAME`]
      : []),
    ...(status.cluster ? clusterLines(status.cluster) : []),
    ...(status.warmRule ? [`warm machines: ${status.warmRule}`] : []),
    ...(status.swappedOut ?? []).map((s) => `  ${s.name} swapped out ${s.at.replace('T', ' ').slice(0, 19)}: ${s.reason}`),
    `default engine: ${status.defaultEngine}`,
    ...status.engines.map(
      (e) =>
        `engine ${e.name}: ${e.available ? 'available' : 'unavailable'} (${e.detail}${e.ready ? `; ${e.ready} processes ready` : ''})${e.warning ? `\n  warning: ${e.warning}` : ''}`,
    ),
  ];
  ctx.term.out.write(lines.join('\n') + '\n');
}

/** A node's cluster: its engines, its machines, and each node with how many it runs. */
function clusterLines(cluster: ClusterStatus): string[] {
  const live = cluster.nodes.filter((n) => n.live).length;
  return [
    `cluster: ${cluster.database} with ${cluster.store}: ${plural(cluster.machines, 'machine')}, ${live} of ${plural(cluster.nodes.length, 'node')} live`,
    ...cluster.nodes.map(
      (n) =>
        `  ${n.url}${n.url === cluster.node ? ' (this node)' : ''}: ${n.live ? plural(n.machines, 'machine') : 'gone (its lease ran out; its machines go to the next node asked)'}, Perennial ${n.version}`,
    ),
  ];
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
