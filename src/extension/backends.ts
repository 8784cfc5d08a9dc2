import { configuredEngine } from './machine-defaults.ts';
import * as vscode from 'vscode';
import { HttpClient } from '../client/http-client.ts';
import { FOREVERVM_BASE_URL } from '../client/forevervm-config.ts';
import { connectToLocalServer, localServer, type LocalConnectionOptions } from '../client/local-server-connection.ts';
import { defaultDataDir } from '../platform/data-dir.ts';
import type { ServerInfo } from '../platform/server-info.ts';

export type BackendName = 'local' | 'forevervm';

const TOKEN_KEY = 'perennial.forevervm.token';

/**
 * Where machines live, as the user's settings say: the local server (started on demand, on the
 * default data dir) or hosted ForeverVM with the token kept in SecretStorage. Fires `onDidChange`
 * when either the settings or the token change.
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
        if (event.affectsConfiguration('perennial.backend') || event.affectsConfiguration('perennial.forevervm.baseUrl')) changed();
      }),
      secrets.onDidChange((event) => {
        if (event.key === TOKEN_KEY) changed();
      }),
    ];
  }

  /** How many times the backend, the ForeverVM address or the token changed in this window. */
  get generation(): number {
    return this.#changes;
  }

  get active(): BackendName {
    return vscode.workspace.getConfiguration('perennial').get<BackendName>('backend') === 'forevervm' ? 'forevervm' : 'local';
  }

  get forevervmBaseUrl(): string {
    return vscode.workspace.getConfiguration('perennial').get<string>('forevervm.baseUrl') || FOREVERVM_BASE_URL;
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
