import { OPERATION_NAMES, OPERATIONS, type OperationCalls } from '../shared/operations.ts';
import type { PerennialClient, RunOptions } from '../shared/perennial-client.ts';
import type { NewMachineOptions } from '../shared/requests.ts';
import type { MachineEvent, OutputChunk } from '../shared/types.ts';
import type { MachineRouter } from './machine-router.ts';

/* eslint-disable @typescript-eslint/no-unsafe-declaration-merging -- the operations' methods are made in the constructor, from the table */
/**
 * A node's machines for its own MCP endpoints, wherever each runs, as the router places each
 * call: a machine this node runs is reached in this process (`local`), one another node runs
 * through that node's HTTP API.
 */
export class ClusterClient implements PerennialClient {
  /** `remote`: the client of the node at a URL. */
  constructor(
    private readonly local: PerennialClient,
    private readonly router: MachineRouter,
    private readonly remote: (url: string) => PerennialClient,
  ) {
    for (const op of OPERATION_NAMES) {
      const request = OPERATIONS[op].args as (...args: unknown[]) => { name?: string };
      const call = (client: PerennialClient, given: unknown[]) => (client[op] as (...args: unknown[]) => Promise<unknown>)(...given);
      Object.defineProperty(this, op, {
        value: (...given: unknown[]) => {
          const { name } = request(...given);
          return name === undefined ? call(local, given) : this.#on(name, (client) => call(client, given));
        },
        writable: true,
        configurable: true,
      });
    }
  }

  whoami = () => this.local.whoami();
  status = () => this.local.status();
  create = (options?: NewMachineOptions) =>
    this.router.route(null, { here: () => this.local.create(options), there: (url) => this.remote(url).create(options) });
  run = (name: string, code: string, options?: RunOptions) => this.#on(name, (client) => client.run(name, code, options));
  start = (name: string, code: string, options?: { timeoutSeconds?: number }) => this.#on(name, (client) => client.start(name, code, options));
  result = (name: string, seq: number) => this.#on(name, (client) => client.result(name, seq));
  follow = (name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal) =>
    this.#on(name, (client) => client.follow(name, seq, onOutput, signal));

  /** This node's events (machines on other nodes change without telling it). */
  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void> {
    return this.local.events(onEvent, signal);
  }

  close(): Promise<void> {
    return this.local.close();
  }

  /** `call` on the client of the node that runs the machine. */
  #on<T>(name: string, call: (client: PerennialClient) => Promise<T>): Promise<T> {
    return this.router.route(name, { here: () => call(this.local), there: (url) => call(this.remote(url)) });
  }
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- it only says which methods the constructor made
export interface ClusterClient extends OperationCalls {}
/* eslint-enable @typescript-eslint/no-unsafe-declaration-merging */
