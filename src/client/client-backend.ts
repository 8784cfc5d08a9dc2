import type { Backend, NewMachineOptions, RunOptions } from '../shared/backend.ts';
import type { MachineInfo } from '../shared/types.ts';
import { UnsupportedByBackendError, type ForeverVMClient } from './forevervm-client.ts';
import { ReplConnection } from './repl-connection.ts';

/**
 * The CLI's backend: machines behind a server — the local one, or hosted ForeverVM — reached
 * with the ForeverVM client. Where hosted ForeverVM lacks a Perennial extension, it does with
 * what the protocol has.
 */
export class ClientBackend implements Backend {
  readonly #repls = new Map<string, Promise<ReplConnection>>();

  constructor(private readonly client: ForeverVMClient) {}

  async create(options: NewMachineOptions): Promise<MachineInfo> {
    const name = await this.client.createMachine({
      tags: options.tags,
      memory_mb: options.memoryMb,
      engine: options.engine,
      python: options.python,
      workspace: options.workspace,
      workspace_writable: options.workspaceWritable,
      network: options.network,
    });
    return this.client.details({ name, created_at: new Date().toISOString(), running: true, has_pending_instruction: false, expires_at: null, tags: options.tags ?? {} });
  }

  async list(tags?: Record<string, string>): Promise<MachineInfo[]> {
    const machines = await this.client.listMachines(tags);
    return Promise.all(machines.map((m) => this.client.details(m)));
  }

  /** Over the machine's WebSocket REPL (the fastest path); HTTP when it must interrupt first. */
  async run(name: string, code: string, options: RunOptions = {}) {
    if (options.interrupt) {
      const { instruction_seq: seq } = await this.client.exec(name, code, { timeoutSeconds: options.timeoutSeconds, interrupt: true });
      return { seq, result: await this.client.streamResult(name, seq, options.onOutput ?? (() => {})) };
    }
    let connection = this.#repls.get(name);
    if (!connection) {
      connection = ReplConnection.open(this.client, name);
      this.#repls.set(name, connection);
      connection.catch(() => this.#repls.delete(name));
    }
    return (await connection).exec(code, options.onOutput, options.timeoutSeconds);
  }

  async interrupt(name: string): Promise<void> {
    try {
      await this.client.interrupt(name);
    } catch (error) {
      if (!(error instanceof UnsupportedByBackendError)) throw error;
      // ForeverVM's own way: an instruction that interrupts what runs before it.
      await this.client.exec(name, 'pass', { interrupt: true });
    }
  }

  async swap(name: string): Promise<void> {
    await this.client.swap(name);
  }

  delete(name: string): Promise<void> {
    return this.client.deleteMachine(name);
  }

  isComplete(name: string, code: string) {
    return this.client.isComplete(name, code);
  }

  async close(): Promise<void> {
    for (const connection of this.#repls.values()) void connection.then((c) => c.close(), () => {});
    this.#repls.clear();
  }


}
