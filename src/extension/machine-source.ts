import * as vscode from 'vscode';
import type { MachineDefaults } from './machine-defaults.ts';
import { UnsupportedByBackendError, type PerennialClient } from '../shared/perennial-client.ts';
import type { MachineEvent, MachineInfo, VariableSummary } from '../shared/types.ts';

export const SOURCE_IDS = ['local', 'forevervm', 'team'] as const;
export type SourceId = (typeof SOURCE_IDS)[number];

/** The machines of each backend: the local server's, hosted ForeverVM's (with a token), and a team server's (signed in). */
export type Sources = Record<SourceId, MachineSource>;

export function allSources(sources: Sources): MachineSource[] {
  return SOURCE_IDS.map((id) => sources[id]);
}

export function isSourceId(value: unknown): value is SourceId {
  return (SOURCE_IDS as readonly unknown[]).includes(value);
}

/** A machine of one of the backends. */
export interface MachineRef {
  source: SourceId;
  name: string;
}

const MAX_RETRY_MS = 30_000;

/**
 * The machines of one backend as the editor shows them: listed, then kept current from the
 * server's event stream where it has one (the local server does; it includes what Copilot runs
 * over MCP). When the stream ends (the server stopped or restarted), the server is found or
 * started again, with backoff. Hosted ForeverVM has no stream: it is listed again on refresh.
 */
export class MachineSource implements vscode.Disposable {
  readonly #changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.#changed.event;
  #machines = new Map<string, MachineInfo>();
  readonly #variables = new Map<string, Promise<VariableSummary[]>>();
  #client?: Promise<PerennialClient>;
  #loaded?: Promise<void>;
  #following = false;
  readonly #stop = new AbortController();

  readonly id: SourceId;
  readonly label: string;
  /** What machines made here are made with; none on a backend that chooses for itself (hosted ForeverVM, a team server). */
  readonly defaults?: MachineDefaults;
  /** Whether the person set the backend up (this computer always is; a remote one with its token or key). */
  readonly configured: () => Promise<boolean>;
  readonly #connect: () => Promise<PerennialClient>;
  readonly #log: vscode.LogOutputChannel;

  constructor(options: {
    id: SourceId;
    label: string;
    connect: () => Promise<PerennialClient>;
    configured: () => Promise<boolean>;
    log: vscode.LogOutputChannel;
    defaults?: MachineDefaults;
  }) {
    ({ id: this.id, label: this.label, configured: this.configured, connect: this.#connect, log: this.#log } = options);
    if (options.defaults) this.defaults = options.defaults;
  }

  /** A client of the backend (the local server is started if it does not run). */
  client(): Promise<PerennialClient> {
    this.#client ??= this.#connect();
    this.#client.catch(() => (this.#client = undefined));
    return this.#client;
  }

  /** Forgets the client and the list (the backend's settings or token changed). */
  reset(): void {
    this.#forgetClient();
    this.#loaded = undefined;
    this.#machines.clear();
    this.#variables.clear();
    this.#changed.fire();
  }

  /** The machines, newest first. The first call loads them and starts following the server. */
  async list(): Promise<MachineInfo[]> {
    if (!this.#loaded) {
      this.#loaded = this.#load();
      this.#loaded.catch(() => (this.#loaded = undefined));
    }
    await this.#loaded;
    return [...this.#machines.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  get(name: string): MachineInfo | undefined {
    return this.#machines.get(name);
  }

  /** Whether the machine is known to be gone (the list has been loaded and lacks it). */
  isGone(name: string): boolean {
    return this.#loaded !== undefined && !this.#machines.has(name);
  }

  /** A machine's variables; cached until its next instruction. */
  variables(name: string): Promise<VariableSummary[]> {
    let variables = this.#variables.get(name);
    if (!variables) {
      variables = this.client().then((client) => client.variables(name));
      variables.catch(() => this.#variables.delete(name));
      this.#variables.set(name, variables);
    }
    return variables;
  }

  async refresh(): Promise<void> {
    this.#loaded = this.#load();
    await this.#loaded;
    this.#changed.fire();
  }

  dispose(): void {
    this.#stop.abort();
    this.#forgetClient();
    this.#changed.dispose();
  }

  #forgetClient(): void {
    void this.#client?.then(
      (client) => client.close(),
      () => {},
    );
    this.#client = undefined;
  }

  /** Lists the machines; the first list that succeeds starts following the server. */
  async #load(): Promise<void> {
    await this.#reload();
    if (!this.#following) {
      this.#following = true;
      void this.#follow();
    }
  }

  async #reload(): Promise<void> {
    const machines = await (await this.client()).list();
    this.#machines = new Map(machines.map((info) => [info.name, info]));
    this.#variables.clear();
  }

  async #follow(): Promise<void> {
    let delay = 500;
    while (!this.#stop.signal.aborted) {
      const started = Date.now();
      try {
        await (await this.client()).events((event) => this.#apply(event), this.#stop.signal);
      } catch (error) {
        if (this.#stop.signal.aborted || error instanceof UnsupportedByBackendError) return;
        this.#log.warn(`${this.label}: the event stream failed: ${(error as Error).message}`);
      }
      if (this.#stop.signal.aborted) return;
      // A stream that lived a while ended normally (the server stopped): retry quickly.
      delay = Date.now() - started > 10_000 ? 500 : Math.min(delay * 2, MAX_RETRY_MS);
      await new Promise((resolve) => setTimeout(resolve, delay));
      this.#forgetClient();
      await this.refresh().catch((error: Error) => this.#log.warn(`${this.label}: cannot reach the server: ${error.message}`));
    }
  }

  #apply(event: MachineEvent): void {
    switch (event.type) {
      case 'created':
        this.#machines.set(event.machine.name, event.machine);
        break;
      case 'deleted':
        this.#machines.delete(event.name);
        this.#variables.delete(event.name);
        break;
      case 'state': {
        const machine = this.#machines.get(event.name);
        if (machine) machine.state = event.state;
        break;
      }
      case 'instruction':
        this.#variables.delete(event.name);
        break;
      case 'error':
        this.#log.warn(`machine ${event.name}: ${event.message}`);
        return;
      case 'checkpoint':
        return;
    }
    this.#changed.fire();
  }
}
