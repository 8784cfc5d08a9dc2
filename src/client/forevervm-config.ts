import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { HttpClient } from './http-client.ts';
import { CodedError } from '../platform/coded-error.ts';

export const FOREVERVM_BASE_URL = 'https://api.forevervm.com';

/** The ForeverVM CLI's config file, shared with it: `{"token": ..., "server_url": ...}`, mode 0600. */
export function foreverVMConfigPath(): string {
  return join(homedir(), '.config', 'forevervm', 'config.json');
}

/** No ForeverVM token anywhere. */
export class MissingTokenError extends CodedError {
  static override readonly errorCode = 'MissingToken';
  constructor() {
    super(`No ForeverVM token: set FOREVERVM_TOKEN, or run perennial login (it writes ${foreverVMConfigPath()})`);
  }
}

/** A client of hosted ForeverVM: FOREVERVM_TOKEN / FOREVERVM_BASE_URL, else the config file. */
export async function hostedClient(env: NodeJS.ProcessEnv = process.env): Promise<HttpClient> {
  const config = JSON.parse(await readFile(foreverVMConfigPath(), 'utf8').catch(() => '{}')) as { token?: string; server_url?: string };
  const token = env.FOREVERVM_TOKEN || config.token;
  if (!token) throw new MissingTokenError();
  return new HttpClient({ baseUrl: env.FOREVERVM_BASE_URL || config.server_url || FOREVERVM_BASE_URL, token });
}
