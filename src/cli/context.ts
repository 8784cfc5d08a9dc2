import { resolve } from 'node:path';
import { HttpClient } from '../client/http-client.ts';
import { savedServerKey } from '../client/server-keys.ts';
import { CodedError } from '../platform/coded-error.ts';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { EngineName, NewMachineOptions } from '../shared/requests.ts';
import type { Terminal } from './result-printer.ts';

/** What every command gets: where machines are, and where to talk. */
export interface CliContext {
  /** The data dir the command works on. */
  dataDir: string;
  /** Where the machines are: the local server on the data dir, or hosted ForeverVM. */
  backend: 'local' | 'forevervm';
  /** A Perennial server elsewhere (`--server`), which it talks to instead of either. */
  server?: string;
  openClient(): Promise<HttpClient>;
  term: Terminal;
  stdin: NodeJS.ReadableStream;
  /** Where the interactive prompt keeps its history. */
  historyFile: string;
}

/** Opens a client for one command and always closes it, so that no connection is left open. */
export async function withClient<T>(ctx: CliContext, task: (client: PerennialClient) => Promise<T>): Promise<T> {
  const client = await ctx.openClient();
  try {
    return await task(client);
  } finally {
    await client.close();
  }
}

/** The flags a command that creates machines takes (`machine new`, `exec`, `repl`, `mcp`). */
export interface MachineFlags {
  engine?: EngineName;
  python?: string;
  workspace?: string;
  workspaceWrite?: boolean;
  /** `machine new --workdir`: the folder it works in. */
  workdir?: string;
  network?: boolean;
}

/**
 * What a machine a command creates is made with. The interpreter is `--python`, else
 * `PERENNIAL_PYTHON` as this command sees it, and a workspace or a workdir is resolved against
 * this command's folder: both are sent with the request, so that they hold even when the server that makes the
 * machine was started earlier, elsewhere, with another environment. Each engine takes its own
 * options and ignores the other's.
 */
export function newMachineOptions(flags: MachineFlags, env: NodeJS.ProcessEnv = process.env): NewMachineOptions {
  const python = flags.python ?? (env.PERENNIAL_PYTHON || undefined);
  return {
    ...(flags.engine ? { engine: flags.engine } : {}),
    ...(python ? { python } : {}),
    ...(flags.workspace ? { workspace: resolve(flags.workspace), workspaceWritable: flags.workspaceWrite ?? false } : {}),
    ...(flags.workdir ? { workdir: resolve(flags.workdir) } : {}),
    ...(flags.network ? { network: true } : {}),
  };
}

/** `--server` without a token to show it. */
class NoTokenError extends CodedError {
  static override readonly errorCode = 'NoToken';
}

/**
 * A client of the Perennial server at `url` (`--server`): a cluster's node or its load balancer,
 * another computer's server, or a team's server. Its token is PERENNIAL_TOKEN, else the key
 * `perennial login --server URL` saved in the data dir.
 */
export function serverClient(url: string, dataDir: string, env: NodeJS.ProcessEnv = process.env): HttpClient {
  return new HttpClient({ baseUrl: url.replace(/\/+$/, ''), token: serverToken(url, dataDir, env) });
}

/** The token of the server at `url` (`--server`): PERENNIAL_TOKEN, else the key saved for it. */
export function serverToken(url: string, dataDir: string, env: NodeJS.ProcessEnv = process.env): string {
  const token = env.PERENNIAL_TOKEN?.trim() || savedServerKey(dataDir, url);
  if (!token)
    throw new NoTokenError(
      `--server ${url} needs a token: your key on a team's server (perennial login --server ${url}), or the server's own (its data dir's server-token) in PERENNIAL_TOKEN`,
    );
  return token;
}

/** The flags that reach the machines this command reached, for a message that says how to come back. */
export function backendFlags(ctx: CliContext): string {
  return ctx.server ? ` --server ${ctx.server}` : ctx.backend === 'forevervm' ? ' --backend forevervm' : '';
}
