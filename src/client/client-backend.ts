import type { Backend, NewMachineOptions, RunOptions } from '../shared/backend.ts';
import type { MachineInfo } from '../shared/types.ts';
import type { ForeverVMClient } from './forevervm-client.ts';

/** The CLI's backend: machines behind a server (the local one), reached with the ForeverVM client. */
export class ClientBackend implements Backend {
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
    return this.client.machine(name);
  }

  async list(tags?: Record<string, string>): Promise<MachineInfo[]> {
    const machines = await this.client.listMachines(tags);
    return Promise.all(machines.map((m) => this.client.machine(m.name)));
  }

  async run(name: string, code: string, options: RunOptions = {}) {
    const { instruction_seq: seq } = await this.client.exec(name, code, { timeoutSeconds: options.timeoutSeconds, interrupt: options.interrupt });
    const result = await this.client.streamResult(name, seq, options.onOutput ?? (() => {}));
    return { seq, result };
  }

  async interrupt(name: string): Promise<void> {
    await this.client.interrupt(name);
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
    // Nothing to release: the server keeps the machines.
  }
}
