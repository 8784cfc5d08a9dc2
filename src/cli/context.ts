import type { Backend } from '../shared/backend.ts';
import type { Terminal } from './result-printer.ts';

/** What every command gets: where machines are, and where to talk. */
export interface CliContext {
  /** The data dir the command works on. */
  dataDir: string;
  /** Where the machines are: the local server on the data dir, or hosted ForeverVM. */
  backend: 'local' | 'forevervm';
  openBackend(): Promise<Backend>;
  term: Terminal;
  stdin: NodeJS.ReadableStream;
  /** Where the interactive prompt keeps its history. */
  historyFile: string;
}

/** Opens the backend for one command and always closes it, so machines are saved. */
export async function withBackend<T>(ctx: CliContext, task: (backend: Backend) => Promise<T>): Promise<T> {
  const backend = await ctx.openBackend();
  try {
    return await task(backend);
  } finally {
    await backend.close();
  }
}
