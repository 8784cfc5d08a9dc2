import { z } from 'zod';
import { OPERATIONS } from '../../shared/operations.ts';
import { FileEncoding, FilePath } from '../../shared/requests.ts';
import { utf8Text } from '../file-text.ts';
import { answerDeadline, json, replId, text, tool } from './tool.ts';

export const listFiles = tool({
  name: 'list-repl-files',
  title: 'List REPL files',
  description: 'Lists a folder inside a REPL (its working directory by default).',
  inputSchema: z.object({ replId, path: FilePath.optional() }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: name, path }, { client }) {
    return json(await client.listFiles(name, path ?? ''));
  },
});

export const readFile = tool({
  name: 'read-repl-file',
  title: 'Read a REPL file',
  description: 'Reads a file inside a REPL: text as text, anything else as base64.',
  inputSchema: z.object({ replId, path: OPERATIONS.readFile.request.shape.path }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  async handler({ replId: name, path }, { client }) {
    const file = await client.readFile(name, path);
    const text = utf8Text(file.content);
    return json({
      path: file.path,
      size: file.size,
      ...(text === null ? { encoding: 'base64', content: file.content } : { encoding: 'utf8', content: text }),
    });
  },
});

export const writeFile = tool({
  name: 'write-repl-file',
  title: 'Write a REPL file',
  description: 'Writes a file inside a REPL, making its folders.',
  inputSchema: z.object({ replId, ...OPERATIONS.writeFile.request.pick({ path: true, content: true }).shape, encoding: FileEncoding.optional() }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async handler({ replId: name, path, content, encoding }, { client }) {
    return json(await client.writeFile(name, path, content, encoding ?? 'utf8'));
  },
});

export const installPackages = tool({
  name: 'install-python-packages',
  title: 'Install Python packages',
  description:
    "Installs packages into a REPL, and into nothing else: Pyodide packages for sandbox REPLs, by name; pip packages for python REPLs, into the REPL's own environment (which sees the user's interpreter's packages, and changes none of them): names, wheels, archives or project folders (paths from the REPL's working directory), '-r requirements.txt' and '--find-links DIR' as entries. A fork takes them along; a rollback leaves them.",
  inputSchema: z.object({ replId, packages: OPERATIONS.installPackages.request.shape.packages }),
  // Open-world: pip fetches from the package index; it changes only the REPL.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  longRunning: true,
  async handler({ replId: name, packages }, { client, answerWithinMs }) {
    const installing = client.installPackages(name, packages);
    const deadline = answerDeadline(answerWithinMs);
    try {
      const installed = await Promise.race([installing, deadline.passed]);
      if (installed !== undefined) return text(`Installed: ${installed}`);
    } finally {
      deadline.clear();
    }
    installing.catch(() => {});
    // A REPL's installs and code take turns: a second call waits for this one, then finds the packages there.
    return text(
      `Still installing into ${name} after ${Math.round(answerWithinMs / 1000)} s; it goes on, and the REPL's code waits for it. ` +
        'Call install-python-packages again with the same packages to wait for its end: what is installed by then is not installed again.',
    );
  },
});
