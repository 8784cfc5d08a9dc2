import { z } from 'zod';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { MachineEvent } from '../shared/types.ts';
import type { ClusterDirectory } from './directory.ts';

/**
 * What a node announces of changes to its machines, through the directory: the events of the
 * last moment, as its clients get them, except that a machine made is named only (its details
 * would not fit the database's 8000 bytes with every tag), and the nodes that hear it ask its node
 * for them.
 */
const Announcement = z.object({
  from: z.string(),
  node: z.string(),
  events: z.array(z.looseObject({ type: z.string(), name: z.string() })),
});

/** How long a node gathers its events before it announces them: one announcement, not one per event, on a busy node. */
const GATHER_MS = 100;
/** The most an announcement carries: PostgreSQL's limit (8000 bytes), less the envelope. */
const MOST_BYTES = 7500;

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
  /** Events gathered for the next announcement. */
  #gathered: string[] = [];
  #gathering?: NodeJS.Timeout;

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

  /** Tells the other nodes of a change to one of this node's machines, with the others of the moment. */
  announce(event: MachineEvent): void {
    this.#gathered.push(JSON.stringify(event.type === 'created' ? { type: event.type, name: event.machine.name } : event));
    if (this.#gathering) return;
    this.#gathering = setTimeout(() => this.#flush(), GATHER_MS);
    this.#gathering.unref();
  }

  /** Announces what was gathered, in as few announcements as fit. */
  #flush(): void {
    this.#gathering = undefined;
    const envelope = (events: string[]) => `{"from":${JSON.stringify(this.self)},"node":${JSON.stringify(this.#url)},"events":[${events.join(',')}]}`;
    let batch: string[] = [];
    let bytes = 0;
    const send = () => {
      if (batch.length) void this.directory.announce(envelope(batch)).catch(() => {});
    };
    for (const event of this.#gathered.splice(0)) {
      // An event too large to announce (an error's long message) is left out: listings stay right.
      if (event.length > MOST_BYTES) continue;
      if (bytes + event.length > MOST_BYTES) {
        send();
        batch = [];
        bytes = 0;
      }
      batch.push(event);
      bytes += event.length + 1;
    }
    send();
  }

  /** Calls `listener` with each change the other nodes announce, until the answer is called. */
  watch(listener: (event: MachineEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async stop(): Promise<void> {
    clearTimeout(this.#gathering);
    this.#gathering = undefined;
    this.#gathered = [];
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
    const { node, events } = announced.data;
    for (const event of events) {
      let heard: MachineEvent;
      if (event.type === 'created') {
        const machine = await this.peer(node)
          .get(event.name)
          .catch(() => undefined);
        if (!machine) continue;
        heard = { type: 'created', machine: { ...machine, node } };
      } else heard = event as MachineEvent;
      for (const listener of this.#listeners) listener(heard);
    }
  }
}
