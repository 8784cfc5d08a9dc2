import { createHash } from 'node:crypto';
import { basename, isAbsolute, join } from 'node:path';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { NewMachineOptions } from '../shared/requests.ts';
import type { MachineInfo } from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';

/** The tag that names a notebook's machine: the notebook's absolute path. */
export const NOTEBOOK_TAG = 'jupyter-notebook';
/** The tag that names the machine of a kernel whose front end names no notebook: the kernel's id, which Jupyter keeps across its restarts. */
export const KERNEL_TAG = 'jupyter-kernel';
/** What a tag value may hold; a longer path is named by its hash. */
const MAX_TAG_VALUE = 256;

/** Where a kernel finds its machine. */
export interface MachineChoice {
  /** A kernelspec pinned to one machine (`perennial kernel install --machine`). */
  pinned?: string;
  /** `JPY_SESSION_NAME`: the notebook's path, relative to jupyter_server's root or absolute. */
  sessionName?: string;
  /** The kernel's working folder: Jupyter starts it in the notebook's. */
  cwd: string;
  /** The connection file, whose name carries the kernel's id. */
  connectionFile: string;
  /** What a machine made for the notebook is made with. */
  defaults: NewMachineOptions;
}

/** The machine found, and what to tell the person about it in the kernel's first output. */
export interface NotebookMachine {
  info: MachineInfo;
  /** What the kernel's first output says: which machine, whether it came back (a restart adds its checkpoint). */
  notes: string[];
}

/**
 * A notebook's machine: the one tagged with its path (made on the notebook's first kernel), so
 * that every later kernel for it (a restart of Jupyter, culling, a reboot, a killed kernel)
 * finds the same state. A front end that names no notebook gets the machine of the kernel's id,
 * which Jupyter keeps across restarts of that kernel but not of the server.
 */
export async function findNotebookMachine(client: PerennialClient, choice: MachineChoice): Promise<NotebookMachine> {
  if (choice.pinned) {
    const info = await pinnedMachine(client, choice.pinned, choice.defaults);
    return { info, notes: [`This kernel runs on machine ${info.name}, which its kernelspec names.`] };
  }
  const notebook = choice.sessionName ? notebookPath(choice.sessionName, choice.cwd) : undefined;
  const tag: Record<string, string> = notebook ? { [NOTEBOOK_TAG]: tagValue(notebook) } : { [KERNEL_TAG]: kernelId(choice.connectionFile) };
  const [found] = await client.list(tag);
  if (found) {
    const cameBack = found.nextSeq > 0;
    const what = notebook ? `this notebook's machine (${notebook})` : "this kernel's machine";
    return {
      info: found,
      notes: [
        cameBack
          ? `Machine ${found.name} is ${what}: its variables, imports and functions are as the last kernel left them.`
          : `Machine ${found.name} is ${what}.`,
      ],
    };
  }
  const info = await client.create({ ...choice.defaults, tags: { ...choice.defaults.tags, ...tag } });
  return {
    info,
    notes: [
      notebook
        ? `Machine ${info.name} is new, and this notebook's (${notebook}): every later kernel for it comes back to its state.`
        : `Machine ${info.name} is this kernel's own: the front end names no notebook (JPY_SESSION_NAME), so a new kernel for it after Jupyter restarts gets a new machine. Pin one: perennial kernel install --machine ${info.name}`,
    ],
  };
}

async function pinnedMachine(client: PerennialClient, name: string, defaults: NewMachineOptions): Promise<MachineInfo> {
  try {
    return await client.get(name);
  } catch (error) {
    if (!(error instanceof ForeverVMError) || error.code !== 'MachineNotFound') throw error;
    return client.create({ ...defaults, name });
  }
}

/**
 * The notebook's absolute path: the session name as given when it is absolute; else, as
 * jupyter_server gives it (relative to its root, the kernel started in the notebook's folder),
 * its file name in the kernel's folder.
 */
function notebookPath(sessionName: string, cwd: string): string {
  return isAbsolute(sessionName) ? sessionName : join(cwd, basename(sessionName));
}

/** Jupyter names its connection files `kernel-<id>.json`; any other name is its own id. */
function kernelId(connectionFile: string): string {
  return tagValue(
    basename(connectionFile)
      .replace(/^kernel-/, '')
      .replace(/\.json$/, ''),
  );
}

function tagValue(text: string): string {
  return text.length <= MAX_TAG_VALUE ? text : `sha256:${createHash('sha256').update(text).digest('hex')}`;
}
