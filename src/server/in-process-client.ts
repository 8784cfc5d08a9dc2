import type { PerennialClient, RunOptions } from '../shared/perennial-client.ts';
import type { CallerMachines } from './caller-machines.ts';
import { OperationClient, type OperationInput, type OperationName, type OperationResult } from '../shared/operations.ts';
import type { NewMachineOptions } from '../shared/requests.ts';
import type { MachineEvent, OutputChunk } from '../shared/types.ts';
import { toForeverVMError } from './machine-answers.ts';

/**
 * The machines of this process's MachineManager, as one caller may reach them, behind the client
 * interface, for the local server's own MCP endpoints: no loopback HTTP, no token, no second
 * encoding of figures. Requests are checked as the server checks them, and errors are the
 * ForeverVMErrors an HTTP client would get for the same call.
 */
export class InProcessClient extends OperationClient implements PerennialClient {
  constructor(private readonly machines: CallerMachines) {
    super();
  }

  whoami = () => this.#answer(() => this.machines.whoami());
  status = () => this.#answer(() => this.machines.status());
  create = (options?: NewMachineOptions) => this.#answer(() => this.machines.create(options));
  run = (name: string, code: string, options: RunOptions = {}) => this.#answer(() => this.machines.run(name, code, options));
  start = (name: string, code: string, options: { timeoutSeconds?: number } = {}) =>
    this.#answer(async () => (await this.machines.exec(name, code, options)).seq);
  result = (name: string, seq: number) => this.#answer(() => this.machines.result(name, seq));
  follow = (name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal) =>
    this.#answer(() => this.machines.follow(name, seq, onOutput, signal));

  protected carry<K extends OperationName>(op: K, request: OperationInput<K>): Promise<OperationResult<K>> {
    return this.#answer(() => this.machines.operation(op, request as Record<string, unknown>));
  }

  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void> {
    const unwatch = this.machines.watch(onEvent);
    return new Promise((resolve) => {
      const stop = () => {
        unwatch();
        resolve();
      };
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
    });
  }

  /** Nothing to let go of: the manager belongs to the server. */
  async close(): Promise<void> {}

  async #answer<T>(call: () => T | Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw toForeverVMError(error);
    }
  }
}
