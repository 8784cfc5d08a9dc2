import { HttpClient } from '../client/http-client.ts';
import { MachineMovedError } from '../machines/machine-errors.ts';
import { OPERATION_NAMES, OPERATIONS, type OperationCalls } from '../shared/operations.ts';
import type { PerennialClient, RunOptions } from '../shared/perennial-client.ts';
import type { NewMachineOptions } from '../shared/requests.ts';
import type { MachineEvent, OutputChunk } from '../shared/types.ts';
import { untilLeaseEnds, type Placement } from './placement.ts';

/* eslint-disable @typescript-eslint/no-unsafe-declaration-merging -- the operations' methods are made in the constructor, from the table */
/**
 * A node's machines for its own MCP endpoints, wherever each runs: a machine this node runs is
 * reached in this process (`local`), one another node runs through that node's HTTP API, with
 * the cluster's token. A machine that moved while it was asked is placed again, once.
 */
export class ClusterClient implements PerennialClient {
  readonly #remotes = new Map<string, HttpClient>();

  /**
   * `patienceMs`: how long a machine whose node does not answer is placed again (its lease and a
   * margin: then another node takes it).
   */
  constructor(
    private readonly local: PerennialClient,
    private readonly place: (name: string) => Promise<Placement>,
    private readonly token: string,
    private readonly patienceMs: number,
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
  create = (options?: NewMachineOptions) => this.local.create(options);
  run = (name: string, code: string, options?: RunOptions) => this.#on(name, (client) => client.run(name, code, options));
  start = (name: string, code: string, options?: { timeoutSeconds?: number }) => this.#on(name, (client) => client.start(name, code, options));
  result = (name: string, seq: number) => this.#on(name, (client) => client.result(name, seq));
  follow = (name: string, seq: number, onOutput: (chunk: OutputChunk) => void, signal?: AbortSignal) =>
    this.#on(name, (client) => client.follow(name, seq, onOutput, signal));

  /** This node's events (machines on other nodes change without telling it). */
  events(onEvent: (event: MachineEvent) => void, signal: AbortSignal): Promise<void> {
    return this.local.events(onEvent, signal);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#remotes.values()].map((client) => client.close()));
    this.#remotes.clear();
  }

  /**
   * `call` on the client of the machine's node. A machine that moved meanwhile is placed again,
   * once; one whose node does not answer (it died, and its lease runs on) is placed again until
   * another node takes it. A call that reached a node that then died is not sent again: what it
   * did is lost with that node, which the machine's next result says.
   */
  async #on<T>(name: string, call: (client: PerennialClient) => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.patienceMs;
    let moved = false;
    for (;;) {
      const placement = await this.place(name);
      try {
        return await call(this.#client(placement));
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (isMoved(error as Error) && !moved) moved = true;
        else if (code !== 'Unreachable' || placement.local || Date.now() > deadline) throw error;
        else await untilLeaseEnds(placement);
      }
    }
  }

  #client(placement: Placement): PerennialClient {
    if (placement.local) return this.local;
    let remote = this.#remotes.get(placement.url);
    if (!remote) {
      remote = new HttpClient({ baseUrl: placement.url, token: this.token });
      this.#remotes.set(placement.url, remote);
    }
    return remote;
  }
}

/** Whether an error says the machine moved to another node (in this process, or as another node answered). */
function isMoved(error: Error): boolean {
  return error instanceof MachineMovedError || (error as { code?: unknown }).code === MachineMovedError.errorCode;
}

// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- it only says which methods the constructor made
export interface ClusterClient extends OperationCalls {}
/* eslint-enable @typescript-eslint/no-unsafe-declaration-merging */
