import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { HttpClient } from '../../client/http-client.ts';
import { saveServerKey, serverKeyName } from '../../client/server-keys.ts';
import { ForeverVMError } from '../../shared/forevervm-error.ts';
import { FOREVERVM_BASE_URL, foreverVMConfigPath } from '../../client/forevervm-config.ts';
import { writeFileAtomic } from '../../platform/atomic-file.ts';
import type { CliContext } from '../context.ts';
import { ExitError } from '../errors.ts';

export interface LoginCommandOptions {
  token?: string;
  baseUrl?: string;
}

/**
 * `perennial login`: asks for a ForeverVM token (hidden on a terminal; or `--token`, or stdin),
 * checks it when the service can be reached, and writes the ForeverVM CLI's config file (0600).
 */
export async function loginCommand(ctx: CliContext, options: LoginCommandOptions): Promise<void> {
  const token = (options.token ?? (await askToken(ctx, ctx.server ? `Your key for ${ctx.server}: ` : 'ForeverVM token: '))).trim();
  if (!token || /\s/.test(token)) throw new ExitError(2, 'perennial: that is not a token (it is empty or has spaces)');
  if (ctx.server) return serverLogin(ctx, ctx.server, token);
  const baseUrl = options.baseUrl ?? FOREVERVM_BASE_URL;
  try {
    const who = await new HttpClient({ baseUrl, token }).whoami();
    ctx.term.err.write(`Logged in to ${baseUrl} as ${who.account}.\n`);
  } catch (error) {
    if (error instanceof ForeverVMError && error.status === 401) throw new ExitError(1, `perennial: ${baseUrl} refused the token; nothing was saved`);
    ctx.term.err.write(`perennial: could not check the token (${(error as Error).message}); saving it anyway.\n`);
  }
  const path = foreverVMConfigPath();
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeFileAtomic(path, JSON.stringify({ token, ...(options.baseUrl ? { server_url: options.baseUrl } : {}) }, null, 2) + '\n', 0o600);
  ctx.term.err.write(`Saved to ${path}.\n`);
}

/** `perennial login --server URL`: checks the key with the server, then keeps it in the data dir for that server. */
async function serverLogin(ctx: CliContext, server: string, key: string): Promise<void> {
  let who: { account: string };
  try {
    who = await new HttpClient({ baseUrl: serverKeyName(server), token: key }).whoami();
  } catch (error) {
    if (error instanceof ForeverVMError && error.status === 401) throw new ExitError(1, `perennial: ${server} refused the key; nothing was saved`);
    throw new ExitError(1, `perennial: could not reach ${server} (${(error as Error).message}); nothing was saved`);
  }
  const path = await saveServerKey(ctx.dataDir, server, key);
  ctx.term.err.write(`Logged in to ${server} as ${who.account}; the key is kept in ${path}.\n`);
}

async function askToken(ctx: CliContext, prompt: string): Promise<string> {
  const input = ctx.stdin as NodeJS.ReadStream;
  if (!input.isTTY) return text(input);
  ctx.term.err.write(prompt);
  // Read the line without echoing it: the token is a secret.
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input, output: silent, terminal: true });
  const answer = await new Promise<string>((resolve) => rl.question('', resolve));
  rl.close();
  ctx.term.err.write('\n');
  return answer;
}
