import type { PerennialClient } from '../shared/perennial-client.ts';
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
