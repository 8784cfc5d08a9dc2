import type { PerennialClient, RunOptions } from '../shared/perennial-client.ts';
import type { ManagerEvent, MachineManager } from '../machines/machine-manager.ts';
import { base64Content, MAX_FILE_BYTES, type FileEncoding, type NewMachineOptions } from '../shared/requests.ts';
import type { MachineEvent, OutputChunk } from '../shared/types.ts';
import { localAccount, statusReport, toForeverVMError, toMachineEvent } from './machine-answers.ts';

/**
 * The machines of this process's MachineManager behind the client interface, for the local
 * server's own MCP endpoints: no loopback HTTP, no token, no second encoding of figures. Errors
 * are the ForeverVMErrors an HTTP client would get for the same call.
 */
export class InProcessClient implements PerennialClient {
  constructor(private readonly manager: MachineManager) {}

  whoami = () => this.#answer(() => localAccount());
  status = () => this.#answer(() => statusReport(this.manager));
  create = (options?: NewMachineOptions) => this.#answer(() => this.manager.create(options));
  list = (tags?: Record<string, string>) => this.#answer(() => this.manager.list(tags));
  get = (name: string) => this.#answer(() => this.manager.get(name));
  delete = (name: string) => this.#answer(() => this.manager.delete(name));
  run = (name: string, code: string, options: RunOptions = {}) => this.#answer(() => this.manager.run(name, code, options));
  result = (name: string, seq: number) => this.#answer(() => this.manager.result(name, seq));
  follow = (name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal) =>
    this.#answer(() => this.manager.follow(name, seq, onOutput, signal));
  interrupt = (name: string) => this.#answer(() => this.manager.interrupt(name));
  variables = (name: string) => this.#answer(() => this.manager.kernel(name, 'variables', {}));
  variable = (name: string, variable: string) => this.#answer(() => this.manager.kernel(name, 'variable', { name: variable }));
  history = (name: string, last?: number) => this.#answer(() => this.manager.history(name, last));
  installPackages = (name: string, packages: string[]) => this.#answer(() => this.manager.installPackages(name, packages));
  listFiles = (name: string, path = '') => this.#answer(() => this.manager.kernel(name, 'list_files', { path }));
  readFile = (name: string, path: string) => this.#answer(() => this.manager.kernel(name, 'read_file', { path, limit: MAX_FILE_BYTES }));
  fork = (name: string, options: { tags?: Record<string, string> } = {}) => this.#answer(() => this.manager.fork(name, options));
  checkpoint = (name: string, label?: string) => this.#answer(() => this.manager.checkpoint(name, label === undefined ? {} : { label }));
  checkpoints = (name: string) => this.#answer(() => this.manager.checkpoints(name));
  deleteCheckpoint = (name: string, checkpoint: string) => this.#answer(() => this.manager.deleteCheckpoint(name, checkpoint));
  rollback = (name: string, checkpoint: string) => this.#answer(() => this.manager.rollback(name, checkpoint));
  upgrade = (name: string) => this.#answer(() => this.manager.upgrade(name));
  reset = (name: string) => this.#answer(() => this.manager.kernel(name, 'reset', {}));
  inspect = (name: string, expression: string) => this.#answer(() => this.manager.kernel(name, 'inspect', { expr: expression }));
  isComplete = (name: string, code: string) => this.#answer(() => this.manager.kernel(name, 'is_complete', { code }));
  complete = (name: string, code: string, cursor?: number) => this.#answer(() => this.manager.complete(name, { code, cursor }));

  swap(name: string) {
    return this.#answer(async () => {
      await this.manager.swap(name);
      return this.manager.get(name);
    });
  }

  writeFile(name: string, path: string, content: string, encoding: FileEncoding = 'utf8') {
    return this.#answer(() => this.manager.kernel(name, 'write_file', { path, content: base64Content(content, encoding) }));
  }

  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void> {
    const listener = (event: ManagerEvent) => onEvent(toMachineEvent(event));
    this.manager.on('event', listener);
    return new Promise((resolve) => {
      const stop = () => {
        this.manager.off('event', listener);
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
