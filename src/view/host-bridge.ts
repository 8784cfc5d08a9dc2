import type {
  McpUiHostContext,
  McpUiInitializeRequest,
  McpUiInitializeResult,
  McpUiSizeChangedNotification,
  McpUiToolCancelledNotification,
  McpUiToolInputNotification,
  McpUiUpdateModelContextRequest,
} from '@modelcontextprotocol/ext-apps';
import type { CallToolRequest, CallToolResult, ReadResourceRequest, ReadResourceResult } from '@modelcontextprotocol/client';

/** The MCP Apps protocol version the view speaks (the extension's stable one). */
const PROTOCOL_VERSION = '2026-01-26';

/** What the view asks the host: each method's params and result. */
interface ViewRequests {
  'ui/initialize': [McpUiInitializeRequest['params'], McpUiInitializeResult];
  'tools/call': [CallToolRequest['params'], CallToolResult];
  'resources/read': [ReadResourceRequest['params'], ReadResourceResult];
  'ui/update-model-context': [McpUiUpdateModelContextRequest['params'], Record<string, unknown>];
}

/** What the host tells the view. */
export interface HostNotifications {
  'ui/notifications/tool-input': McpUiToolInputNotification['params'];
  'ui/notifications/tool-input-partial': McpUiToolInputNotification['params'];
  'ui/notifications/tool-result': CallToolResult;
  'ui/notifications/tool-cancelled': McpUiToolCancelledNotification['params'];
  'ui/notifications/host-context-changed': McpUiHostContext;
}

interface JsonRpcMessage {
  jsonrpc: '2.0';
  id?: number | string;
  method?: string;
  params?: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

/**
 * The view's end of the MCP Apps protocol: JSON-RPC 2.0 over `postMessage` with the host that
 * framed it. The SDK's `App` class does this too, but brings the whole MCP client and zod with it
 * (650 KB against this page's 100 KB budget); the view needs five methods of it. The end-to-end
 * test drives this against the SDK's own host side (`AppBridge`), so the two cannot drift apart
 * unnoticed.
 */
export class HostBridge {
  #nextId = 1;
  readonly #pending = new Map<number, { resolve(result: unknown): void; reject(error: Error): void }>();
  readonly #handlers = new Map<string, (params: never) => void>();
  readonly #host: Window;

  constructor(host: Window = window.parent) {
    this.#host = host;
    window.addEventListener('message', (event) => {
      // Only the frame's host speaks to the view.
      if (event.source !== this.#host) return;
      this.#receive(event.data as JsonRpcMessage);
    });
  }

  /** Says hello, and gets the host's capabilities and context (theme, styles, display). */
  async connect(appInfo: { name: string; version: string }): Promise<McpUiInitializeResult> {
    const result = await this.request('ui/initialize', { appInfo, appCapabilities: {}, protocolVersion: PROTOCOL_VERSION });
    this.notify('ui/notifications/initialized', {});
    return result;
  }

  on<M extends keyof HostNotifications>(method: M, handler: (params: HostNotifications[M]) => void): void {
    this.#handlers.set(method, handler);
  }

  request<M extends keyof ViewRequests>(method: M, params: ViewRequests[M][0]): Promise<ViewRequests[M][1]> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (result: unknown) => void, reject });
      this.#post({ jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method: 'ui/notifications/initialized' | 'ui/notifications/size-changed', params: McpUiSizeChangedNotification['params']): void {
    this.#post({ jsonrpc: '2.0', method, params });
  }

  /** Calls one of the server's tools through the host; a tool's error result is thrown with its text. */
  async callTool(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const result = await this.request('tools/call', { name, arguments: args });
    if (result.isError) throw new Error(textOf(result) || `${name} failed`);
    return result;
  }

  #post(message: JsonRpcMessage): void {
    // The view's frame has an opaque origin: '*' is the only target it can name.
    this.#host.postMessage(message, '*');
  }

  #receive(message: JsonRpcMessage): void {
    if (message?.jsonrpc !== '2.0') return;
    if (message.method === undefined && typeof message.id === 'number') {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (message.error) pending.reject(new Error(message.error.message));
      else pending.resolve(message.result);
    } else if (message.method !== undefined && message.id !== undefined) {
      // Requests from the host: a ping or the teardown are answered; the view offers no tools.
      const known = message.method === 'ping' || message.method === 'ui/resource-teardown';
      this.#post(
        known
          ? { jsonrpc: '2.0', id: message.id, result: {} }
          : { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `${message.method} not found` } },
      );
    } else if (message.method !== undefined) {
      this.#handlers.get(message.method)?.(message.params as never);
    }
  }
}

/** The text blocks of a tool's result, joined. */
export function textOf(result: CallToolResult): string {
  return result.content
    .filter((block) => block.type === 'text')
    .map((block) => block.text)
    .join('\n');
}
