import { configuredEngine } from './machine-defaults.ts';
import * as vscode from 'vscode';
import { HttpClient } from '../client/http-client.ts';
import { FOREVERVM_BASE_URL } from '../client/forevervm-config.ts';
import { connectToLocalServer, localServer, type LocalConnectionOptions } from '../client/local-server-connection.ts';
import { defaultDataDir } from '../platform/data-dir.ts';
import type { ServerInfo } from '../platform/server-info.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { PerennialClient } from '../shared/perennial-client.ts';

export type BackendName = 'local' | 'forevervm' | 'team';

const TOKEN_KEY = 'perennial.forevervm.token';
const TEAM_KEY = 'perennial.team.key';
const SETTINGS = ['perennial.backend', 'perennial.forevervm.baseUrl', 'perennial.team.url'];

/**
 * Where machines live, as the user's settings say: the local server (started on demand, on the
 * default data dir), hosted ForeverVM, or a team's Perennial server, with the ForeverVM token and
 * the person's team key kept in SecretStorage. Fires `onDidChange` when the settings, the token or
 * the key change.
 */
export class Backends implements vscode.Disposable {
  readonly #changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.#changed.event;
  readonly #subscriptions: vscode.Disposable[];
  #changes = 0;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    readonly log: vscode.LogOutputChannel,
  ) {
    const changed = () => {
      this.#changes++;
      this.#changed.fire();
    };
    this.#subscriptions = [
      this.#changed,
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (SETTINGS.some((setting) => event.affectsConfiguration(setting))) changed();
      }),
      secrets.onDidChange((event) => {
        if (event.key === TOKEN_KEY || event.key === TEAM_KEY) changed();
      }),
    ];
  }

  /** How many times the backend, an address, the token or the key changed in this window. */
  get generation(): number {
    return this.#changes;
  }

  get active(): BackendName {
    const backend = vscode.workspace.getConfiguration('perennial').get<string>('backend');
    return backend === 'forevervm' || backend === 'team' ? backend : 'local';
  }

  get forevervmBaseUrl(): string {
    return vscode.workspace.getConfiguration('perennial').get<string>('forevervm.baseUrl') || FOREVERVM_BASE_URL;
  }

  /** The team server's address (`perennial.team.url`), without a trailing slash; undefined when unset. */
  get teamUrl(): string | undefined {
    return vscode.workspace.getConfiguration('perennial').get<string>('team.url')?.trim().replace(/\/+$/, '') || undefined;
  }

  readonly dataDir = defaultDataDir();

  token(): Thenable<string | undefined> {
    return this.secrets.get(TOKEN_KEY);
  }

  setToken(token: string): Thenable<void> {
    return this.secrets.store(TOKEN_KEY, token);
  }

  removeToken(): Thenable<void> {
    return this.secrets.delete(TOKEN_KEY);
  }

  /** The person's key for the team server; none when they signed out (or sign in through MCP only). */
  teamKey(): Thenable<string | undefined> {
    return this.secrets.get(TEAM_KEY);
  }

  setTeamKey(key: string): Thenable<void> {
    return this.secrets.store(TEAM_KEY, key);
  }

  removeTeamKey(): Thenable<void> {
    return this.secrets.delete(TEAM_KEY);
  }

  /**
   * For a local server that VS Code starts: when it swaps idle machines out, and the engine of
   * machines created without one. Read when a server starts, so that one started later (after an
   * idle stop) has the settings of then.
   */
  readonly #serverOptions: LocalConnectionOptions = {
    get idleSeconds() {
      return vscode.workspace.getConfiguration('perennial').get<number>('idleSeconds') || undefined;
    },
    get maxWarm() {
      return vscode.workspace.getConfiguration('perennial').get<number>('maxWarm') || undefined;
    },
    get engine() {
      return configuredEngine();
    },
  };

  /** A client of the local server, which is started if it does not run. */
  localClient(): Promise<HttpClient> {
    return connectToLocalServer(this.dataDir, this.#serverOptions);
  }

  /** A client of hosted ForeverVM with the stored token. */
  async hostedClient(): Promise<HttpClient> {
    const token = await this.token();
    if (!token) throw new Error('no ForeverVM token is set; run "Perennial: Set ForeverVM Token"');
    return new HttpClient({ baseUrl: this.forevervmBaseUrl, token });
  }

  /** A client of the team server with the person's key. */
  async teamClient(): Promise<HttpClient> {
    const [url, key] = [this.teamUrl, await this.teamKey()];
    if (!url || !key) throw new Error('not signed in to a team server; run "Perennial: Sign In to a Team Server"');
    return new HttpClient({ baseUrl: url, token: key });
  }

  /** The local server, started if it does not run. */
  async localServer(): Promise<ServerInfo> {
    const server = await localServer(this.dataDir, this.#serverOptions);
    this.log.info(`local server ${server.url} (pid ${server.pid}) on ${this.dataDir}`);
    return server;
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
  }
}

/**
 * The account the client's token names (`/v1/whoami`), checked where a bad token becomes a
 * notification rather than a failing server: a refusal as `refused` says, anything else as the
 * backend that cannot be reached.
 */
export async function checkedAccount(client: PerennialClient, messages: { refused: string; unreachable: (reason: string) => string }): Promise<string> {
  try {
    return (await client.whoami()).account;
  } catch (error) {
    if (error instanceof ForeverVMError && error.status === 401) throw new Error(messages.refused, { cause: error });
    throw new Error(messages.unreachable((error as Error).message), { cause: error });
  }
}
