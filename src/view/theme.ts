import type { McpUiHostContext } from '@modelcontextprotocol/ext-apps';

/**
 * Takes the host's look: its theme (light or dark, which picks the page's own fallbacks) and its
 * style variables, which the page's CSS reads before those fallbacks. Font faces the host offers
 * are not loaded: they would come from elsewhere, and the page loads nothing.
 */
export function applyHostContext(context: McpUiHostContext): void {
  const root = document.documentElement;
  if (context.theme) {
    root.dataset.theme = context.theme;
    root.style.colorScheme = context.theme;
  }
  for (const [name, value] of Object.entries(context.styles?.variables ?? {})) {
    if (value) root.style.setProperty(name, value);
  }
}
