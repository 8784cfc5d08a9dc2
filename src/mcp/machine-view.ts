import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY, registerAppResource } from '@modelcontextprotocol/ext-apps/server';
import type { McpServer } from '@modelcontextprotocol/server';

/** The MCP App view of a call's result and its machine (`src/view/`), built into one HTML page. */
export const MACHINE_VIEW_URI = 'ui://perennial/machine';

/**
 * What a tool's definition carries to link the view: `ui.resourceUri`, and the flat key that
 * hosts of the extension's first drafts read.
 */
export const MACHINE_VIEW_META = { ui: { resourceUri: MACHINE_VIEW_URI }, [RESOURCE_URI_META_KEY]: MACHINE_VIEW_URI };

/** A tool only the view calls: hosts keep it from the model (the extension's `visibility`). */
export const VIEW_ONLY_META = { ui: { visibility: ['app'] } };

/**
 * The built page: beside the bundle in `view/`; from sources (tests, tsx) the last build's. Read
 * at the first request for it and kept.
 */
function viewPage(): string {
  const candidates = [new URL('./view/machine.html', import.meta.url), new URL('../../dist/view/machine.html', import.meta.url)];
  for (const candidate of candidates) {
    try {
      return readFileSync(candidate, 'utf8');
    } catch {
      // The next place.
    }
  }
  throw new Error(`The MCP App view is not built: none of ${candidates.map((c) => fileURLToPath(c)).join(', ')} exists (run npm run build)`);
}

let page: string | undefined;

/**
 * Registers the view as a `ui://` resource. Everything it needs is inlined in the page, so it asks
 * the host for no network origin at all; its own Content Security Policy says the same.
 */
export function registerMachineView(server: McpServer): void {
  registerAppResource(
    server,
    'machine-view',
    MACHINE_VIEW_URI,
    {
      title: 'Perennial machine view',
      description: "A call's code, output, value and figures, and the machine as it is now: its variables, checkpoints and actions.",
    },
    async () => {
      page ??= viewPage();
      return {
        contents: [
          {
            uri: MACHINE_VIEW_URI,
            mimeType: RESOURCE_MIME_TYPE,
            text: page,
            _meta: { ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: true } },
          },
        ],
      };
    },
  );
}
