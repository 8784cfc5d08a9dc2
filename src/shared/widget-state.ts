import { z } from 'zod';
import { FrontEndComm } from './requests.ts';
import type { DisplayComm } from './types.ts';

/** Where Jupyter saves a notebook's widgets: this key of `metadata.widgets`. */
export const WIDGET_STATE_MIME = 'application/vnd.jupyter.widget-state+json';
/** A widget's view in a cell's output. */
export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** A comm message from a machine to its front end, as ipywidgets sends it (buffers in base64). */
export type CommMessage = DisplayComm['comm'];

/** One widget model as Jupyter saves it in a notebook. */
export interface SavedModel {
  model_name: string;
  model_module: string;
  model_module_version: string;
  state: Record<string, unknown>;
  buffers?: Array<{ path: Array<string | number>; data: string; encoding: 'base64' }>;
}

/** A notebook's widgets as Jupyter saves them (`metadata.widgets[WIDGET_STATE_MIME]`). */
export interface SavedWidgets {
  version_major: 2;
  version_minor: 0;
  state: Record<string, SavedModel>;
}

/** What the extension tells Perennial's widget renderer. */
export type ToRenderer =
  /** The notebook's widgets now; `live`: those whose comm is open on the machine. */
  | { type: 'models'; models: Record<string, SavedModel>; live: string[] }
  | { type: 'comm'; comm: CommMessage }
  /** The machine took the renderer's message `id` (a widget sends its next change once the last is taken). */
  | { type: 'delivered'; id: number; error?: string };

/** What Perennial's widget renderer tells the extension: it started (and wants the models), or a widget's message to the machine. */
export const FromRenderer = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ready') }),
  z.object({ type: z.literal('comm'), id: z.number().int(), comm: FrontEndComm }),
]);
export type FromRenderer = z.infer<typeof FromRenderer>;

/**
 * The widget models a notebook's machine has open, as its comm messages and a front end's make
 * and change them: what a renderer that starts late is given, and what the notebook saves.
 */
export class WidgetModels {
  readonly #models = new Map<string, SavedModel>();

  /** The saved widgets of a notebook, as the models to begin with (their comms are not open). */
  static from(saved: unknown): WidgetModels {
    const models = new WidgetModels();
    const state = (saved as Partial<SavedWidgets> | undefined)?.state;
    if (state && typeof state === 'object')
      for (const [id, model] of Object.entries(state)) if (model && typeof model.model_name === 'string') models.#models.set(id, model);
    return models;
  }

  /** A comm message either way: a widget's comm opened (`jupyter.widget`), its state updated, its comm closed. */
  take(message: Pick<CommMessage, 'msg_type' | 'content' | 'buffers'>): void {
    const id = String(message.content.comm_id ?? '');
    const data = (message.content.data ?? {}) as { state?: Record<string, unknown>; buffer_paths?: Array<Array<string | number>>; method?: string };
    if (message.msg_type === 'comm_close') {
      this.#models.delete(id);
      return;
    }
    if (message.msg_type === 'comm_open') {
      const state = data.state;
      if (message.content.target_name !== 'jupyter.widget' || !state || typeof state._model_name !== 'string') return;
      this.#models.set(id, {
        model_name: state._model_name,
        model_module: String(state._model_module),
        model_module_version: String(state._model_module_version),
        state: {},
      });
    }
    const model = this.#models.get(id);
    if (!model || !data.state || (message.msg_type === 'comm_msg' && data.method !== 'update' && data.method !== 'echo_update')) return;
    model.state = { ...model.state, ...data.state };
    const paths = data.buffer_paths ?? [];
    if (!paths.length) return;
    const key = (path: Array<string | number>) => JSON.stringify(path);
    const kept = (model.buffers ?? []).filter((buffer) => !paths.some((path) => key(path) === key(buffer.path)));
    const added = paths.flatMap((path, i) => (message.buffers[i] === undefined ? [] : [{ path, data: message.buffers[i]!, encoding: 'base64' as const }]));
    model.buffers = [...kept, ...added];
  }

  get size(): number {
    return this.#models.size;
  }

  /** As a notebook saves them. */
  saved(): SavedWidgets {
    return { version_major: 2, version_minor: 0, state: Object.fromEntries(this.#models) };
  }
}
