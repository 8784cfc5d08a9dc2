import { MachineManager, type MachineManagerOptions } from '../machines/machine-manager.ts';
import type { Backend, NewMachineOptions, RunOptions } from '../shared/backend.ts';

/** The CLI's backend when it owns the data dir itself: machines run inside this process. */
export class InProcessBackend implements Backend {
  private constructor(private readonly manager: MachineManager) {}

  static async open(options: MachineManagerOptions): Promise<InProcessBackend> {
    return new InProcessBackend(await MachineManager.open(options));
  }

  create(options: NewMachineOptions) {
    return this.manager.create(options);
  }

  async list(tags?: Record<string, string>) {
    return this.manager.list(tags);
  }

  run(name: string, code: string, options: RunOptions = {}) {
    return this.manager.run(name, code, options);
  }

  async interrupt(name: string) {
    this.manager.interrupt(name);
  }

  swap(name: string) {
    return this.manager.swap(name);
  }

  delete(name: string) {
    return this.manager.delete(name);
  }

  isComplete(name: string, code: string) {
    return this.manager.isComplete(name, code);
  }

  close() {
    return this.manager.close();
  }
}
