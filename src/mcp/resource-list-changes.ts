import type { McpServer } from '@modelcontextprotocol/server';
import type { PerennialClient } from '../shared/perennial-client.ts';

/**
 * Tells MCP clients when machines come and go, which changes the resource list: each tracked
 * connection's server sends `notifications/resources/list_changed`, and `alsoNotify` reaches the
 * rest (2026-07-28 listeners on a per-request endpoint). One event stream per endpoint, not per
 * connection; a backend without one (hosted ForeverVM) sends none.
 */
export class ResourceListChanges {
  readonly #servers = new Set<McpServer>();
  readonly #stop = new AbortController();

  constructor(client: PerennialClient, alsoNotify: () => void = () => {}) {
    client
      .events((event) => {
        if (event.type !== 'created' && event.type !== 'deleted') return;
        for (const server of this.#servers) {
          // A server that is not connected (closed, or a discarded discovery probe) leaves the set.
          if (server.isConnected()) server.sendResourceListChanged();
          else this.#servers.delete(server);
        }
        alsoNotify();
      }, this.#stop.signal)
      .catch(() => {});
  }

  /** Notifies `server`'s client from now on; returns it. */
  track(server: McpServer): McpServer {
    this.#servers.add(server);
    return server;
  }

  close(): void {
    this.#stop.abort();
    this.#servers.clear();
  }
}
