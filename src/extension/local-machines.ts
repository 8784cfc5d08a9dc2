import * as vscode from 'vscode';
import type { ForeverVMClient } from '../client/forevervm-client.ts';
import { connectToLocalServer } from '../client/local-server-connection.ts';
import type { MachineEvent, MachineInfo, VariableSummary } from '../shared/types.ts';
import type { Backends } from './backends.ts';

const MAX_RETRY_MS = 30_000;

/**
 * The local server's machines as the editor shows them: listed once, then kept current from the
 * server's event stream, which includes what Copilot runs over MCP. When the stream ends (the
 * server stopped or restarted), it finds or starts the server again, with backoff.
 */
export class LocalMachines implements vscode.Disposable {
  readonly #changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.#changed.event;
  #machines = new Map<string, MachineInfo>();
  readonly #variables = new Map<string, Promise<VariableSummary[]>>();
  #client?: Promise<ForeverVMClient>;
  #loaded?: Promise<void>;
  #following = false;
  readonly #stop = new AbortController();

  constructor(
    private readonly backends: Backends,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** A client of the local server, which is started if it does not run. */
  client(): Promise<ForeverVMClient> {
    this.#client ??= connectToLocalServer(this.backends.dataDir, { idleSeconds: this.backends.idleSeconds });
    this.#client.catch(() => (this.#client = undefined));
    return this.#client;
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
    this.#changed.dispose();
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
    const client = await this.client();
    const listed = await client.listMachines();
    const details = await Promise.all(listed.map((machine) => client.machine(machine.name).catch(() => undefined)));
    this.#machines = new Map(details.filter((info) => info !== undefined).map((info) => [info.name, info]));
    this.#variables.clear();
  }

  async #follow(): Promise<void> {
    let delay = 500;
    while (!this.#stop.signal.aborted) {
      const started = Date.now();
      try {
        await (await this.client()).events((event) => this.#apply(event), this.#stop.signal);
      } catch (error) {
        if (this.#stop.signal.aborted) return;
        this.log.warn(`the local server's event stream failed: ${(error as Error).message}`);
      }
      if (this.#stop.signal.aborted) return;
      // A stream that lived a while ended normally (the server stopped): retry quickly.
      delay = Date.now() - started > 10_000 ? 500 : Math.min(delay * 2, MAX_RETRY_MS);
      await new Promise((resolve) => setTimeout(resolve, delay));
      this.#client = undefined;
      await this.refresh().catch((error: Error) => this.log.warn(`cannot reach the local server: ${error.message}`));
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
        this.log.warn(`machine ${event.name}: ${event.message}`);
        return;
      case 'checkpoint':
        return;
    }
    this.#changed.fire();
  }
}
