import { isJSONRPCNotification, type JSONRPCMessage, type MessageExtraInfo, type Transport } from '@modelcontextprotocol/server';
import { ending, refusal, subscribe, taskListen, type TaskSubscriptionSources } from './task-subscriptions.ts';

/**
 * The stdio wire as `serveStdio` sees it, less the subscriptions to tasks: a `subscriptions/listen`
 * that asks for `taskIds` is served here (`task-subscriptions.ts`), and its cancel ends it; every
 * other message passes through, in order, to the SDK's entry, which serves the other listens.
 */
export class TaskListenStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  readonly #open = new Map<string | number, { stop: Promise<() => void>; message: JSONRPCMessage }>();

  constructor(
    private readonly wire: Transport,
    private readonly sources: TaskSubscriptionSources,
  ) {}

  async start(): Promise<void> {
    this.wire.onmessage = (message, extra) => this.#receive(message, extra);
    this.wire.onerror = (error) => this.onerror?.(error);
    this.wire.onclose = () => {
      for (const id of [...this.#open.keys()]) this.#end(id);
      this.onclose?.();
    };
    await this.wire.start();
  }

  send(message: JSONRPCMessage, options?: Parameters<Transport['send']>[1]): Promise<void> {
    return this.wire.send(message, options);
  }

  setProtocolVersion = (version: string): void => this.wire.setProtocolVersion?.(version);

  /** Ends this side's subscriptions as the server does when it stops (their empty results), then the wire. */
  async close(): Promise<void> {
    for (const [id, { message }] of [...this.#open]) {
      this.#end(id);
      await this.#send(message);
    }
    await this.wire.close();
  }

  #receive(message: JSONRPCMessage, extra?: MessageExtraInfo): void {
    const listen = taskListen(message);
    if (listen) {
      const refused = refusal(listen);
      if (refused) return void this.#send(refused);
      const stop = subscribe(listen, this.sources, (notification) => void this.#send(notification));
      this.#open.set(listen.id, { stop, message: ending(listen) });
      return;
    }
    const cancelled = isJSONRPCNotification(message) && message.method === 'notifications/cancelled' ? message.params?.requestId : undefined;
    if ((typeof cancelled === 'string' || typeof cancelled === 'number') && this.#open.has(cancelled)) return this.#end(cancelled);
    this.onmessage?.(message, extra);
  }

  #end(id: string | number): void {
    const open = this.#open.get(id);
    this.#open.delete(id);
    void open?.stop.then((stop) => stop());
  }

  #send(message: JSONRPCMessage): Promise<void> {
    return this.wire.send(message).catch((error: Error) => this.onerror?.(error));
  }
}
