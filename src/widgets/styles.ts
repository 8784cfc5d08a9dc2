/** The widgets' style sheets, made by the build from `widgets-7.css` and `widgets-8.css` (their fonts inline). */
declare const WIDGET_STYLES: { 7: string; 8: string };

const added = new Set<7 | 8>();

/**
 * Adds the style sheet of ipywidgets' controls of one line (7 or 8) to the output's page, once,
 * as Jupyter's front ends add the one whose models they load: the two lines' sheets differ.
 */
export function useWidgetStyle(line: 7 | 8): void {
  if (added.has(line)) return;
  added.add(line);
  const style = document.createElement('style');
  style.dataset.perennialWidgets = String(line);
  style.textContent = WIDGET_STYLES[line];
  document.head.append(style);
}
