import { z } from 'zod';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { MachineEvent } from '../shared/types.ts';
import type { ClusterDirectory } from './directory.ts';

/**
 * What a node announces of a change to its machines, through the directory: the event as its
 * clients get it, except that a machine made is named only (its details would not fit the
 * database's 8000 bytes with every tag), and the nodes that hear it ask its node for them.
 */
const Announcement = z.object({
  from: z.string(),
  node: z.string(),
  event: z.looseObject({ type: z.string(), name: z.string() }),
});

/**
 * The changes to the cluster's machines as every node tells of them: each node announces its own
 * machines' events, and hears the others', so that a client of any node (its event stream, its
 * MCP list-changed notices) learns of every machine. What is announced while a node cannot hear
 * (its connection to the database dropped) is not heard; listings stay right.
 */
export class NodeEvents {
  readonly #listeners = new Set<(event: MachineEvent) => void>();
  #url = '';
  #stopHearing?: () => Promise<void>;

  /** `self`: this node's id; `peer`: the client of the node at a URL, asked for a machine made there. */
  constructor(
    private readonly directory: ClusterDirectory,
    private readonly self: string,
    private readonly peer: (url: string) => PerennialClient,
  ) {}

  /** Hears the other nodes, and announces this one's events as the node at `url`. */
  start(url: string): void {
    this.#url = url;
    this.#stopHearing = this.directory.hear((payload) => void this.#heard(payload));
  }

  /** Tells the other nodes of a change to one of this node's machines. */
  announce(event: MachineEvent): void {
    const told = event.type === 'created' ? { type: event.type, name: event.machine.name } : event;
    void this.directory.announce(JSON.stringify({ from: this.self, node: this.#url, event: told })).catch(() => {});
  }

  /** Calls `listener` with each change the other nodes announce, until the answer is called. */
  watch(listener: (event: MachineEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async stop(): Promise<void> {
    await this.#stopHearing?.();
  }

  async #heard(payload: string): Promise<void> {
    let announced;
    try {
      announced = Announcement.safeParse(JSON.parse(payload));
    } catch {
      return;
    }
    if (!announced.success || announced.data.from === this.self || this.#listeners.size === 0) return;
    const { node, event } = announced.data;
    let heard: MachineEvent;
    if (event.type === 'created') {
      const machine = await this.peer(node)
        .get(event.name)
        .catch(() => undefined);
      if (!machine) return;
      heard = { type: 'created', machine: { ...machine, node } };
    } else heard = event as MachineEvent;
    for (const listener of this.#listeners) listener(heard);
  }
}
