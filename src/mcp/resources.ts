import { ResourceNotFoundError, ResourceTemplate, type McpServer, type ReadResourceResult } from '@modelcontextprotocol/server';
import type { PerennialClient } from '../shared/perennial-client.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { completeMachineName, completeMachinePath } from './completions.ts';
import { utf8Text } from './file-text.ts';
import { FIGURE_URI_TEMPLATE, historyWithFigureLinks, readFigure } from './figures.ts';

const MACHINES_URI = 'perennial://machines';

/** The media type of a file by its extension, for clients that show or parse resources. */
const MEDIA_TYPES: Record<string, string> = {
  py: 'text/x-python',
  txt: 'text/plain',
  md: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  json: 'application/json',
  html: 'text/html',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  svg: 'image/svg+xml',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  pdf: 'application/pdf',
};

function mediaType(path: string, text: boolean): string {
  const extension = /\.([^./]+)$/.exec(path)?.[1]?.toLowerCase() ?? '';
  return MEDIA_TYPES[extension] ?? (text ? 'text/plain' : 'application/octet-stream');
}

const json = (uri: string, value: unknown): ReadResourceResult => ({ contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(value, null, 2) }] });

/** A machine or file that is not there answers as the spec's resource-not-found; other errors pass. */
async function orNotFound<T>(uri: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    const missing =
      (error instanceof ForeverVMError && error.status === 404) || /FileNotFoundError|IsADirectoryError|No such file/.test((error as Error).message);
    if (missing) throw new ResourceNotFoundError(uri, (error as Error).message);
    throw error;
  }
}

const variable = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join('/') : (value ?? ''));

/**
 * What a client can read without calling a tool: the list of machines, a machine's history, any
 * file inside a machine (text as text, anything else as base64) and any figure its instructions
 * drew, with completions for the machine names and paths.
 */
export function registerResources(server: McpServer, client: PerennialClient): void {
  const machineNames = completeMachineName(client);

  server.registerResource(
    'machines',
    MACHINES_URI,
    { title: 'Python REPLs', description: 'Every REPL (machine) with its tags, engine and state, newest first.', mimeType: 'application/json' },
    async (uri) => json(uri.href, await client.list()),
  );

  server.registerResource(
    'history',
    new ResourceTemplate('perennial://machines/{replId}/history', {
      list: async () => ({
        resources: (await client.list()).map((m) => ({
          uri: `perennial://machines/${m.name}/history`,
          name: `${m.name} history`,
          mimeType: 'application/json',
        })),
      }),
      complete: { replId: machineNames },
    }),
    {
      title: 'REPL history',
      description: 'The instructions a REPL ran, with their results (figures as resource URIs), oldest first.',
      mimeType: 'application/json',
    },
    async (uri, { replId }) => json(uri.href, historyWithFigureLinks(variable(replId), await orNotFound(uri.href, () => client.history(variable(replId))))),
  );

  server.registerResource(
    'files',
    new ResourceTemplate('perennial://machines/{replId}/files/{+path}', {
      // Files are listed by folder with list-repl-files; the path completes here.
      list: undefined,
      complete: {
        replId: machineNames,
        path: completeMachinePath(client),
      },
    }),
    { title: 'REPL file', description: "A file inside a REPL, by its path from the REPL's working directory." },
    async (uri, variables) => {
      const path = variable(variables.path);
      const file = await orNotFound(uri.href, () => client.readFile(variable(variables.replId), path));
      const text = utf8Text(file.content);
      return {
        contents: [
          text === null ? { uri: uri.href, mimeType: mediaType(path, false), blob: file.content } : { uri: uri.href, mimeType: mediaType(path, true), text },
        ],
      };
    },
  );

  server.registerResource(
    'figure',
    // Results link their figures; there are too many to list.
    new ResourceTemplate(FIGURE_URI_TEMPLATE, { list: undefined, complete: { replId: machineNames } }),
    { title: 'REPL figure', description: 'Figure n (from 1) that instruction seq drew, as PNG.', mimeType: 'image/png' },
    async (uri, { replId, seq, n }) =>
      readFigure(uri.href, variable(seq), variable(n), (instruction) => orNotFound(uri.href, () => client.result(variable(replId), instruction))),
  );
}
