import type { PerennialClient } from '../shared/perennial-client.ts';
import type { EngineName, NewMachineOptions } from '../shared/requests.ts';
import type { Terminal } from './result-printer.ts';

/** What every command gets: where machines are, and where to talk. */
export interface CliContext {
  /** The data dir the command works on. */
  dataDir: string;
  /** Where the machines are: the local server on the data dir, or hosted ForeverVM. */
  backend: 'local' | 'forevervm';
  openClient(): Promise<PerennialClient>;
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

/**
 * The interpreter of a machine a command creates: `--python`, else `PERENNIAL_PYTHON` as this
 * command sees it. Sent with the request, so that it holds even when the server that makes the
 * machine was started earlier, with another environment. Not for a sandbox machine.
 */
export function interpreterOption(options: { engine?: EngineName; python?: string }, env: NodeJS.ProcessEnv = process.env): Pick<NewMachineOptions, 'python'> {
  const python = options.python ?? (env.PERENNIAL_PYTHON || undefined);
  return python && options.engine !== 'sandbox' ? { python } : {};
}
