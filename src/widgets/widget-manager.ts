import type { ICallbacks, IClassicComm } from '@jupyter-widgets/base';
import { HTMLManager } from '@jupyter-widgets/html-manager';
import type { CommMessage, FromRenderer, SavedModel, ToRenderer } from '../shared/widget-state.ts';
import { useWidgetStyle } from './styles.ts';

type Post = (message: FromRenderer) => void;
/** How long a view waits for the message that opens its model. */
const MODEL_WAIT_MS = 5000;
type JsonObject = Record<string, unknown>;
type Buffers = ArrayBuffer[] | ArrayBufferView[];

/**
 * ipywidgets' own widgets (`@jupyter-widgets/controls` of ipywidgets 7 and 8, and the Output
 * widget) in a notebook's output, their comms carried to the machine by the extension over
 * renderer messaging. A widget library of its own (a module Perennial does not ship) shows why it
 * cannot be shown: nothing is fetched from elsewhere.
 */
export class WidgetManager extends HTMLManager {
  readonly #comms = new Map<string, RendererComm>();
  /** The renderer's messages the machine has not taken yet, by id: their senders' callbacks. */
  readonly #waiting = new Map<number, ICallbacks | undefined>();
  #next = 1;
  /** Resolves once the extension has said which models the notebook has. */
  readonly #modelsKnown: Promise<void>;
  #known!: () => void;
  /** Outputs waiting for a model whose comm is on its way (a view can come before its model's message). */
  readonly #awaited = new Map<string, Array<() => void>>();

  constructor(private readonly post: Post) {
    super({
      loader: (module: string, version: string) =>
        Promise.reject(
          new Error(
            module === 'jupyter-js-widgets'
              ? `This widget is of ipywidgets 6, older than those Perennial's notebooks show (ipywidgets 7 and 8): pip install -U ipywidgets`
              : `${module} ${version} is a widget library Perennial's notebooks do not ship: only ipywidgets' own widgets show here.`,
          ),
        ),
    });
    this.#modelsKnown = new Promise((resolve) => (this.#known = resolve));
  }

  /**
   * Whether the notebook has model `id`: once the extension has said which it has, or the
   * machine's message that opens it has come, which a few seconds see to (the view and the
   * message travel apart).
   */
  async known(id: string): Promise<boolean> {
    await this.#modelsKnown;
    if (this.has_model(id)) return true;
    return new Promise<boolean>((resolve) => {
      const waiting = this.#awaited.get(id) ?? [];
      this.#awaited.set(id, waiting);
      waiting.push(() => resolve(true));
      setTimeout(() => resolve(this.has_model(id)), MODEL_WAIT_MS);
    });
  }

  #arrived(id: string): void {
    for (const resolve of this.#awaited.get(id) ?? []) resolve();
    this.#awaited.delete(id);
  }

  /** A message of the extension's: the notebook's models, a comm message of the machine's, a message of ours taken. */
  async receive(message: ToRenderer): Promise<void> {
    if (message.type === 'delivered') {
      const callbacks = this.#waiting.get(message.id);
      this.#waiting.delete(message.id);
      // A widget holds its next change until the last is taken (ipywidgets' throttling).
      callbacks?.iopub?.status?.({ content: { execution_state: 'idle' } } as never);
      return;
    }
    if (message.type === 'models') {
      const restored = Object.entries(message.models).map(([id, model]) => this.#restore(id, model, message.live.includes(id)));
      this.#known();
      await Promise.all(restored);
      return;
    }
    await this.#fromMachine(message.comm);
  }

  /** A model as the notebook's widgets hold it: with its comm when the machine has it open, else as it was saved. */
  #restore(id: string, model: SavedModel, live: boolean): Promise<unknown> {
    if (this.has_model(id)) return Promise.resolve();
    const state = structuredClone(model.state);
    for (const buffer of model.buffers ?? []) place(state, buffer.path, new DataView(fromBase64(buffer.data).buffer));
    const comm = live ? this.#comm(id, 'jupyter.widget') : undefined;
    return this.new_model(
      { model_id: id, model_name: model.model_name, model_module: model.model_module, model_module_version: model.model_module_version, comm },
      state,
    );
  }

  async #fromMachine(comm: CommMessage): Promise<void> {
    const id = String(comm.content.comm_id);
    const msg = { content: comm.content, metadata: comm.metadata, buffers: comm.buffers.map((b) => new DataView(fromBase64(b).buffer)) };
    if (comm.msg_type === 'comm_open') {
      if (this.has_model(id)) return;
      const made = this.handle_comm_open(this.#comm(id, String(comm.content.target_name)), msg as never);
      this.#arrived(id);
      await made;
      return;
    }
    const known = this.#comms.get(id);
    if (comm.msg_type === 'comm_msg') known?.handle(msg);
    else {
      this.#comms.delete(id);
      known?.closed(msg);
    }
  }

  #comm(id: string, target: string): RendererComm {
    const comm = new RendererComm(id, target, (msgType, content, callbacks, metadata, buffers) => {
      const messageId = this.#next++;
      this.#waiting.set(messageId, callbacks);
      this.post({
        type: 'comm',
        id: messageId,
        comm: { msg_type: msgType, content, metadata: metadata ?? {}, buffers: (buffers ?? []).map(toBase64) },
      });
      return String(messageId);
    });
    this.#comms.set(id, comm);
    return comm;
  }

  /** A widget the front end makes itself (rare: ipywidgets' own are made by the machine) opens its comm there. */
  override async _create_comm(target: string, id: string, data?: JsonObject, metadata?: JsonObject, buffers?: Buffers): Promise<IClassicComm> {
    const comm = this.#comm(id, target);
    if (data !== undefined) comm.open(data, undefined, metadata, buffers);
    return comm;
  }

  /** ipywidgets' controls of the line a model is of (7 or 8), with that line's style sheet. */
  override loadClass(className: string, moduleName: string, moduleVersion: string): ReturnType<HTMLManager['loadClass']> {
    if (moduleName === '@jupyter-widgets/controls') useWidgetStyle(/^[~^]?1\./.test(moduleVersion) ? 7 : 8);
    return super.loadClass(className, moduleName, moduleVersion);
  }

  override _get_comm_info(): Promise<Record<string, never>> {
    return Promise.resolve({});
  }
}

type Send = (msgType: CommMessage['msg_type'], content: JsonObject, callbacks?: ICallbacks, metadata?: JsonObject, buffers?: Buffers) => string;

/** A widget's comm, as ipywidgets' models use one: what they send goes to the extension, what the machine sends comes in here. */
class RendererComm implements IClassicComm {
  #onMessage: ((msg: unknown) => void) | undefined;
  #onClose: ((msg: unknown) => void) | undefined;
  /** What came before its model was made (a box's children follow its opening at once): given to it when it listens. */
  #early: unknown[] = [];

  constructor(
    readonly comm_id: string,
    readonly target_name: string,
    private readonly sendOut: Send,
  ) {}

  open(data: unknown, callbacks?: ICallbacks, metadata?: JsonObject, buffers?: Buffers): string {
    return this.sendOut('comm_open', { comm_id: this.comm_id, target_name: this.target_name, data }, callbacks, metadata, buffers);
  }

  send(data: unknown, callbacks?: ICallbacks, metadata?: JsonObject, buffers?: Buffers): string {
    return this.sendOut('comm_msg', { comm_id: this.comm_id, data }, callbacks, metadata, buffers);
  }

  close(data?: unknown, callbacks?: ICallbacks, metadata?: JsonObject, buffers?: Buffers): string {
    return this.sendOut('comm_close', { comm_id: this.comm_id, data: data ?? {} }, callbacks, metadata, buffers);
  }

  on_msg(callback: (msg: unknown) => void): void {
    this.#onMessage = callback;
    for (const msg of this.#early.splice(0)) callback(msg);
  }

  on_close(callback: (msg: unknown) => void): void {
    this.#onClose = callback;
  }

  handle(msg: unknown): void {
    if (this.#onMessage) this.#onMessage(msg);
    else this.#early.push(msg);
  }

  closed(msg: unknown): void {
    this.#onClose?.(msg);
  }
}

/** Puts a binary buffer into a widget's state at its path, as ipywidgets' `put_buffers` does. */
function place(state: JsonObject, path: Array<string | number>, value: DataView): void {
  let at: Record<string | number, unknown> = state;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path.at(-1)!] = value;
}

function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function toBase64(buffer: ArrayBuffer | ArrayBufferView): string {
  const bytes = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  let text = '';
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text);
}
