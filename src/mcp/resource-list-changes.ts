import type { McpServer } from '@modelcontextprotocol/server';
import type { PerennialClient } from '../shared/perennial-client.ts';

/**
 * Tells MCP clients when machines come and go, which changes the resource list: each tracked
 * connection's server sends `notifications/resources/list_changed`, and each listener hears of it
 * (2026-07-28 subscriptions). One event stream per endpoint, not per connection; a backend without
 * one (hosted ForeverVM) sends none.
 */
export class ResourceListChanges {
  readonly #servers = new Set<McpServer>();
  readonly #listeners = new Set<() => void>();
  readonly #stop = new AbortController();

  constructor(client: PerennialClient) {
    client
      .events((event) => {
        if (event.type !== 'created' && event.type !== 'deleted') return;
        for (const server of this.#servers) {
          // A server that is not connected (closed, or a discarded discovery probe) leaves the set.
          if (server.isConnected()) server.sendResourceListChanged();
          else this.#servers.delete(server);
        }
        for (const listener of this.#listeners) listener();
      }, this.#stop.signal)
      .catch(() => {});
  }

  /** Notifies `server`'s client from now on; returns it. */
  track(server: McpServer): McpServer {
    this.#servers.add(server);
    return server;
  }

  /** Calls `listener` at each change until the returned function is called. */
  listen(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#stop.abort();
    this.#servers.clear();
    this.#listeners.clear();
  }
}
