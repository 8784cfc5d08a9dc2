import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join } from 'node:path';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { NewMachineOptions } from '../shared/requests.ts';
import type { MachineInfo } from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { ranCells, type RanCell } from './notebook-cells.ts';

/** The tag that names a notebook's machine: the notebook's absolute path. */
export const NOTEBOOK_TAG = 'jupyter-notebook';
/** The tag that names the machine of a kernel whose front end names no notebook: the kernel's id, which Jupyter keeps across its restarts. */
export const KERNEL_TAG = 'jupyter-kernel';
/** The tag of a machine that goes when it is no longer wanted: a kernel's whose front end names no notebook. */
export const EXPIRES_TAG = 'expires';
/** How long a kernel's own machine stays unused before the next such kernel removes it (its kernel died without a shutdown). */
export const THROWAWAY_DAYS = 7;
const THROWAWAY_RULE = `at its kernel's shutdown, or after ${THROWAWAY_DAYS} days unused`;
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
  /** The connection file, whose name carries the kernel's id: a Jupyter kernel's, which a front end that names no notebook gets a machine by. */
  connectionFile?: string;
  /** The machine the notebook file itself names (VS Code keeps it in the notebook's metadata): its machine, unless the file was copied or moved. */
  named?: string;
  /** What a machine made for the notebook is made with. */
  defaults: NewMachineOptions;
  /** The server is on another computer (`--server`), where the notebook's folder is not: its machine works in a folder of its own there. */
  elsewhere?: boolean;
}

/** The machine found, and what to tell about it. */
export interface NotebookMachine {
  info: MachineInfo;
  /** What the person needs to know, in the kernel's first output: the notebook moved, was copied, changed kind. */
  notes: string[];
  /** Said in the first output when nothing else explains the state the cells find (no restart): it came back. */
  cameBack: string | null;
  /** For the kernel's log: which machine, and why. */
  logged: string;
  /** A kernel's own machine (no notebook named): it goes at the kernel's shutdown. */
  throwaway: boolean;
}

/**
 * A notebook's machine: the one tagged with its path (made on the notebook's first kernel), so
 * that every later kernel for it (a restart of Jupyter, culling, a reboot, a killed kernel)
 * finds the same state. It works in the notebook's folder (on a server elsewhere, in its own). A notebook renamed or moved takes its
 * machine along, and a copy gets a fork of it: both are known by the cells the file says ran,
 * which are the machine's own instructions by number. A front end that names no notebook gets the
 * machine of the kernel's id, which Jupyter keeps across restarts of that kernel but not of the
 * server, working in the kernel's folder.
 */
export async function findNotebookMachine(client: PerennialClient, choice: MachineChoice): Promise<NotebookMachine> {
  if (choice.pinned) {
    const info = await pinnedMachine(client, choice.pinned, choice.defaults);
    return {
      info,
      notes: [],
      cameBack: cameBackLine(info, 'the machine its kernelspec names'),
      logged: `Machine ${info.name}: the kernelspec names it.`,
      throwaway: false,
    };
  }
  const notebook = choice.sessionName ? notebookPath(choice.sessionName, choice.cwd) : undefined;
  if (!notebook && !choice.connectionFile) throw new Error('A machine is found for a notebook, or for a Jupyter kernel: neither was named');
  const folder = choice.elsewhere ? undefined : await realpath(notebook ? dirname(notebook) : choice.cwd).catch(() => choice.cwd);
  const tag: Record<string, string> = notebook ? { [NOTEBOOK_TAG]: tagValue(notebook) } : { [KERNEL_TAG]: kernelId(choice.connectionFile!) };
  const tagged = await client.list(tag);
  const found = tagged.find((info) => ofKind(info, choice.defaults));
  if (found) return { ...(await cameBackTo(client, found, folder, notebook)), throwaway: !notebook };
  const other = tagged[0];
  const earlier =
    notebook && !other
      ? ((await namedMachine(client, choice.named, notebook, choice.defaults)) ?? (await earlierMachine(client, notebook, choice.defaults)))
      : undefined;
  if (notebook && earlier) return { ...(await followed(client, earlier, notebook, folder, tag)), throwaway: false };
  if (!notebook) await removeForgotten(client);
  const tags = { ...choice.defaults.tags, ...tag, ...(notebook ? {} : { [EXPIRES_TAG]: THROWAWAY_RULE }) };
  const info = await client.create({ ...choice.defaults, workdir: folder, tags });
  const notes = other
    ? [
        `Machine ${info.name} is this notebook's on the ${info.engine} engine, new; machine ${other.name} (${other.engine} engine) still holds its earlier state.`,
      ]
    : [];
  const works = folder ?? 'a folder of its own on the server';
  const logged = notebook
    ? `Machine ${info.name} is new, and this notebook's (${notebook}); it works in ${works}.`
    : `Machine ${info.name} is this kernel's own, working in ${works}: the front end names no notebook (JPY_SESSION_NAME), so it goes ${THROWAWAY_RULE}.`;
  return { info, notes, cameBack: null, logged, throwaway: !notebook };
}

/** Kernels' own machines that no kernel used for `THROWAWAY_DAYS` (theirs died without a shutdown): removed. */
async function removeForgotten(client: PerennialClient): Promise<void> {
  const before = new Date(Date.now() - THROWAWAY_DAYS * 86_400_000).toISOString();
  const forgotten = (await client.list({ [EXPIRES_TAG]: THROWAWAY_RULE })).filter((info) => info.lastUsedAt < before && info.state === 'swapped');
  await Promise.all(forgotten.map((info) => client.delete(info.name).catch(() => {})));
}

async function pinnedMachine(client: PerennialClient, name: string, defaults: NewMachineOptions): Promise<MachineInfo> {
  try {
    return await client.get(name);
  } catch (error) {
    if (!(error instanceof ForeverVMError) || error.code !== 'MachineNotFound') throw error;
    return client.create({ ...defaults, name });
  }
}

/** The notebook's machine found by its tag: moved to the notebook's folder when it works elsewhere (made by an earlier build). */
async function cameBackTo(
  client: PerennialClient,
  found: MachineInfo,
  folder: string | undefined,
  notebook: string | undefined,
): Promise<Omit<NotebookMachine, 'throwaway'>> {
  const what = notebook ? "this notebook's machine" : "this kernel's machine";
  const logged = `Machine ${found.name} is ${what}${notebook ? ` (${notebook})` : ''}.`;
  if (folder === undefined || found.workdir === folder) return { info: found, notes: [], cameBack: cameBackLine(found, what), logged };
  const info = await client.update(found.name, { workdir: folder });
  const was = found.workdir ? ` (it worked in ${found.workdir})` : '';
  return {
    info,
    notes: [`Machine ${info.name} is ${what}${withState(info)}, and works in ${folder} now${was}: relative paths are the notebook's.`],
    cameBack: null,
    logged,
  };
}

/** The machine of the notebook this one was (renamed, moved) or is a copy of. */
interface EarlierMachine {
  info: MachineInfo;
  /** Its notebook's path, as its tag has it; none for a machine made by a front end that kept no path (VS Code before 0.4), which this notebook takes. */
  path?: string;
}

/** The machine the notebook's own file names, when it is there and of the kind asked for. */
async function namedMachine(
  client: PerennialClient,
  name: string | undefined,
  notebook: string,
  defaults: NewMachineOptions,
): Promise<EarlierMachine | undefined> {
  if (!name) return undefined;
  const info = await client.get(name).catch(() => null);
  if (!info || !ofKind(info, defaults)) return undefined;
  const path = info.tags[NOTEBOOK_TAG];
  return path === notebook ? undefined : { info, ...(path ? { path } : {}) };
}

/**
 * The machine whose instructions are the cells this notebook file says ran, by number: the
 * machine of the notebook it was before a rename, or of the one it was copied from.
 */
async function earlierMachine(client: PerennialClient, notebook: string, defaults: NewMachineOptions): Promise<EarlierMachine | undefined> {
  const cells = await ranCells(notebook);
  if (!cells.length) return undefined;
  const candidates = (await client.list()).filter(
    (info) => info.tags[NOTEBOOK_TAG] && ofKind(info, defaults) && info.nextSeq >= Math.min(...cells.map((c) => c.count)),
  );
  let best: { info: MachineInfo; matched: number } | undefined;
  for (const info of candidates) {
    const matched = matchingCells(await client.history(info.name, 1000).catch(() => []), cells);
    if (matched >= Math.max(1, Math.ceil(cells.length / 2)) && matched > (best?.matched ?? 0)) best = { info, matched };
  }
  return best && { info: best.info, path: best.info.tags[NOTEBOOK_TAG]! };
}

/** How many of `cells` are the instructions of that number (a cell's `In [n]` is instruction n - 1). */
function matchingCells(history: Array<{ seq: number; code: string }>, cells: RanCell[]): number {
  const bySeq = new Map(history.map((entry) => [entry.seq, entry.code.trimEnd()]));
  return cells.filter((cell) => bySeq.get(cell.count - 1) === cell.source.trimEnd()).length;
}

/**
 * A renamed or moved notebook takes its machine along (its tag, and its folder); a copy, whose
 * original is still there, gets a fork, so that the two notebooks never write one machine.
 */
async function followed(
  client: PerennialClient,
  earlier: EarlierMachine,
  notebook: string,
  folder: string | undefined,
  tag: Record<string, string>,
): Promise<Omit<NotebookMachine, 'throwaway'>> {
  const { info: origin, path } = earlier;
  // A path named by its hash cannot be looked for: treated as still there, so nothing is taken from it.
  const stillThere = path !== undefined && (path.startsWith('sha256:') || existsSync(path));
  if (stillThere) {
    const info = await client.fork(origin.name, { tags: tag, workdir: folder });
    return {
      info,
      notes: [`This notebook is a copy of ${path}: machine ${info.name}, its own, is a fork of that notebook's machine ${origin.name}, with its state.`],
      cameBack: null,
      logged: `Machine ${info.name} is a fork of ${origin.name}, for this copy (${notebook}) of ${path}.`,
    };
  }
  const info = await client.update(origin.name, { tags: tag, workdir: folder });
  const works = folder ? `, and works in ${folder}` : '';
  return {
    info,
    notes: [
      path
        ? `This notebook was ${path}: its machine ${info.name} came with it${withState(info)}${works}.`
        : `Machine ${info.name}, which this notebook names${withState(info)}${folder ? `, works in ${folder} now: relative paths are the notebook's` : ', is its machine'}.`,
    ],
    cameBack: null,
    logged: `Machine ${info.name} followed its notebook${path ? ` from ${path}` : ''} to ${notebook}.`,
  };
}

/** What a line that says the machine moved adds when the machine has state: one line says both. */
function withState(info: MachineInfo): string {
  return info.nextSeq > 0 ? ', with its variables, imports and functions as the last kernel left them' : '';
}

function cameBackLine(info: MachineInfo, what: string): string | null {
  return info.nextSeq > 0 ? `Machine ${info.name} is ${what}: its variables, imports and functions are as the last kernel left them.` : null;
}

/** Whether a machine is of the kind a kernel makes: another kernelspec's engine gives the notebook another machine. */
function ofKind(info: MachineInfo, defaults: NewMachineOptions): boolean {
  return !defaults.engine || info.engine === defaults.engine;
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
