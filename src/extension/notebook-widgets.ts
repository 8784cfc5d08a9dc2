import * as vscode from 'vscode';
import type { FrontEndComm } from '../shared/requests.ts';
import type { CommDelivery } from '../shared/types.ts';
import { FromRenderer, WIDGET_STATE_MIME, WIDGET_VIEW_MIME, WidgetModels, type CommMessage, type ToRenderer } from '../shared/widget-state.ts';
import { deliveredOutputs } from './notebook-outputs.ts';

/** Perennial's widget renderer (package.json's `notebookRenderer`, built from src/widgets/). */
const RENDERER_ID = 'perennial-widgets';

/** What the widgets of a notebook need of its kernel. */
export interface WidgetHost {
  /** The notebook's machine takes a widget's message; undefined when the notebook has no machine here. */
  deliver(notebook: vscode.NotebookDocument, comm: FrontEndComm): Promise<CommDelivery | undefined>;
  /** Adds outputs to a cell outside any run of it: what a widget's code printed. */
  show(cell: vscode.NotebookCell, outputs: vscode.NotebookCellOutput[]): Promise<void>;
}

/**
 * Live ipywidgets in Perennial's notebooks: the comm messages between a notebook's machine and
 * the widget renderer, carried over renderer messaging both ways, and the notebook's widget
 * models, kept as Jupyter keeps them: given to a renderer that starts late (the first widget
 * shown, a reopened notebook), and saved in the notebook's metadata, as Jupyter saves them.
 */
export class NotebookWidgets implements vscode.Disposable {
  readonly #messaging = vscode.notebooks.createRendererMessaging(RENDERER_ID);
  /** Each notebook's models, by its URI. */
  readonly #models = new Map<string, WidgetModels>();
  /** The cell that made each widget, by its comm: what the widget's code prints goes there. */
  readonly #cells = new Map<string, vscode.NotebookCell>();
  readonly #subscriptions: vscode.Disposable[];

  constructor(
    private readonly host: WidgetHost,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.#subscriptions = [
      this.#messaging.onDidReceiveMessage(({ editor, message }) => void this.#received(editor, message)),
      // As Jupyter saves a notebook's widgets: their state goes into the file, for it to show them when reopened.
      vscode.workspace.onWillSaveNotebookDocument((event) => {
        const models = this.#models.get(event.notebook.uri.toString());
        if (!models?.size) return;
        const edit = new vscode.WorkspaceEdit();
        edit.set(event.notebook.uri, [this.#savedEdit(event.notebook, models)]);
        event.waitUntil(Promise.resolve(edit));
      }),
      vscode.workspace.onDidCloseNotebookDocument((notebook) => this.#models.delete(notebook.uri.toString())),
    ];
  }

  /** A comm message of the machine's (during `cell`'s run, or answering a widget): kept, and sent to the renderers of the notebook. */
  fromMachine(notebook: vscode.NotebookDocument, comm: CommMessage, cell?: vscode.NotebookCell): void {
    this.#modelsOf(notebook).take(comm);
    const id = String(comm.content.comm_id);
    if (comm.msg_type === 'comm_open' && cell) this.#cells.set(id, cell);
    if (comm.msg_type === 'comm_close') this.#cells.delete(id);
    this.#post(notebook, { type: 'comm', comm });
  }

  async #received(editor: vscode.NotebookEditor, raw: unknown): Promise<void> {
    const parsed = FromRenderer.safeParse(raw);
    if (!parsed.success) {
      this.log.warn(`widget renderer: a message that is not one: ${parsed.error.message}`);
      return;
    }
    const { notebook } = editor;
    const message = parsed.data;
    if (message.type === 'ready') {
      // The machine still has the comms of the widgets it made, whatever became of this window.
      const info = await this.host
        .deliver(notebook, { msg_type: 'comm_info', content: { target_name: 'jupyter.widget' }, metadata: {}, buffers: [] })
        .catch(() => undefined);
      const models = this.#modelsOf(notebook).saved().state;
      void this.#messaging.postMessage({ type: 'models', models, live: Object.keys(info?.comms ?? {}) } satisfies ToRenderer, editor);
      return;
    }
    const { comm } = message;
    // A front end's change (a slider moved) is the model's state too.
    this.#modelsOf(notebook).take(comm as CommMessage);
    try {
      const delivery = await this.host.deliver(notebook, comm);
      if (!delivery) throw new Error('this notebook has no machine in this window: run a cell first');
      for (const event of delivery.events) if ('display' in event && 'comm' in event.display) this.fromMachine(notebook, event.display.comm);
      const outputs = deliveredOutputs(delivery.events);
      const cell = this.#cellOf(notebook, String(comm.content.comm_id));
      if (outputs.length && cell) await this.host.show(cell, outputs);
      void this.#messaging.postMessage({ type: 'delivered', id: message.id } satisfies ToRenderer, editor);
    } catch (error) {
      this.log.warn(`widget message to the machine of ${notebook.uri.toString()} failed: ${(error as Error).message}`);
      void this.#messaging.postMessage({ type: 'delivered', id: message.id, error: (error as Error).message } satisfies ToRenderer, editor);
    }
  }

  /** The notebook's models: those its file saved, until its machine's messages change them. */
  #modelsOf(notebook: vscode.NotebookDocument): WidgetModels {
    const key = notebook.uri.toString();
    let models = this.#models.get(key);
    if (!models) {
      const saved = (notebook.metadata as { metadata?: { widgets?: Record<string, unknown> } }).metadata?.widgets?.[WIDGET_STATE_MIME];
      models = WidgetModels.from(saved);
      this.#models.set(key, models);
    }
    return models;
  }

  /** The cell that made a widget, else (a reopened notebook) the cell whose output shows it. */
  #cellOf(notebook: vscode.NotebookDocument, id: string): vscode.NotebookCell | undefined {
    return (
      this.#cells.get(id) ??
      notebook
        .getCells()
        .find((cell) => cell.outputs.some((output) => output.items.some((item) => item.mime === WIDGET_VIEW_MIME && Buffer.from(item.data).includes(id))))
    );
  }

  #savedEdit(notebook: vscode.NotebookDocument, models: WidgetModels): vscode.NotebookEdit {
    const metadata = notebook.metadata as { metadata?: Record<string, unknown> & { widgets?: Record<string, unknown> } };
    const widgets = { ...metadata.metadata?.widgets, [WIDGET_STATE_MIME]: models.saved() };
    return vscode.NotebookEdit.updateNotebookMetadata({ ...metadata, metadata: { ...metadata.metadata, widgets } });
  }

  #post(notebook: vscode.NotebookDocument, message: ToRenderer): void {
    for (const editor of vscode.window.visibleNotebookEditors) if (editor.notebook === notebook) void this.#messaging.postMessage(message, editor);
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
  }
}
