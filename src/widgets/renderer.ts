import type { ActivationFunction } from 'vscode-notebook-renderer';
import type { FromRenderer, ToRenderer } from '../shared/widget-state.ts';
import { WidgetManager } from './widget-manager.ts';

/** A widget view's own children (a box's), as ipywidgets keeps them. */
type ShownView = { displayed: Promise<unknown>; children_views?: { views: Array<Promise<ShownView>> } };

/** Resolves once a view and every view within it are in the page. */
async function allShown(view: ShownView): Promise<void> {
  await view.displayed;
  const children = await Promise.all(view.children_views?.views ?? []);
  await Promise.all(children.map(allShown));
}

/**
 * Perennial's notebook renderer for ipywidgets' views (`application/vnd.jupyter.widget-view+json`):
 * live widgets whose comms reach the notebook's machine through the extension, or, without one
 * (a reopened notebook before its first cell runs), the widgets as the notebook saved them.
 */
export const activate: ActivationFunction = (context) => {
  const post = (message: FromRenderer) => context.postMessage?.(message);
  const manager = new WidgetManager(post);
  context.onDidReceiveMessage?.((message: ToRenderer) => void manager.receive(message));
  // Started late (the first widget shown), or again (the notebook reopened): the models so far.
  // Where there is no extension to ask (a diff of the notebook), there are none.
  if (context.postMessage) post({ type: 'ready' });
  else void manager.receive({ type: 'models', models: {}, live: [] });
  const shown = new Map<string, () => void>();
  return {
    async renderOutputItem(item, element) {
      shown.get(item.id)?.();
      element.replaceChildren();
      const { model_id: id } = item.json() as { model_id?: string };
      if (!id || !(await manager.known(id))) {
        element.textContent = 'This widget is not here: its machine no longer has it, and the notebook was saved without it. Run its cell again.';
        return;
      }
      try {
        const view = await manager.create_view(await manager.get_model(id));
        await manager.display_view(view, element);
        // VS Code sizes the output by what is there when this returns: a box's children come after it.
        await allShown(view);
        shown.set(item.id, () => view.remove());
      } catch (error) {
        // A model or view that could not be made: a widget library not shipped, a broken state.
        element.textContent = error instanceof Error ? error.message : String(error);
      }
    },
    disposeOutputItem(id) {
      for (const [item, remove] of shown) {
        if (id !== undefined && item !== id) continue;
        remove();
        shown.delete(item);
      }
    },
  };
};
