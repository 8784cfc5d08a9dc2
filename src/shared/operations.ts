import { z } from 'zod';
import {
  CheckpointLabel,
  CheckpointRef,
  CodeAndCursor,
  CURSOR_PAST_CODE,
  cursorInCode,
  DottedName,
  FileEncoding,
  FilePath,
  FrontEndComm,
  ForkBody,
  HistoryLast,
  MachineName,
  MachineUpdate,
  Packages,
  VariableName,
} from './requests.ts';
import type { Right } from './machine-rights.ts';
import type {
  CheckpointInfo,
  CommDelivery,
  Completeness,
  Completions,
  FileContent,
  FileListing,
  HistoryEntry,
  InterruptResult,
  MachineInfo,
  ObjectInfo,
  ResetResult,
  RollbackResult,
  UpgradeResult,
  VariableDetail,
  VariableSummary,
  WrittenFile,
} from './types.ts';

/**
 * One of Perennial's operations beyond the ForeverVM protocol, as it crosses HTTP: its route,
 * its request, how a caller's arguments make the request, and its result. The server's routes
 * (`perennial-api.ts`), the HTTP client (`ForeverVMClient.operation`), the in-process client and
 * what hosted ForeverVM does instead (`forevervm-emulation.ts`) all come from `OPERATIONS`; the
 * work is the machines layer's (`machine-operations.ts`).
 */
/**
 * A request as it crosses HTTP, whatever it is about: its route (`{field}`: a path segment, the
 * request's field; the other fields go in the query for GET and DELETE, arrays repeated, or the
 * JSON body), its schema, and where the answer wraps the result. The server's routes and the
 * HTTP client read it, for the machines' operations and the team's alike.
 */
export interface HttpRoute<Request extends z.ZodObject = z.ZodObject> {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  readonly path: string;
  readonly request: Request;
  /** Where the answer wraps the result (`{"variables": [...]}`), the field that holds it. */
  readonly field?: string;
  /** What a backend that lacks it cannot do, in words ("list variables"). */
  readonly what: string;
}

export interface Operation<
  Args extends unknown[],
  Request extends z.ZodObject,
  Result,
  Hosted extends HostedBehaviour = HostedBehaviour,
> extends HttpRoute<Request> {
  /**
   * What the caller must hold on the machine it names (`machine-rights.ts`); a list shows only
   * the machines the caller may read, and a fork, which reads its origin, is its maker's.
   */
  readonly right: Right;
  /** The request a caller's arguments make. */
  readonly args: (...args: Args) => z.input<Request>;
  /**
   * On a backend with only the ForeverVM protocol (hosted ForeverVM): done another way
   * (`ForeverVMEmulation.operations`, which must have exactly these), or refused, in `what`'s words.
   */
  readonly hosted: Hosted;
  /** The result's type; never set. */
  readonly result?: Result;
}

export type HostedBehaviour = 'emulated' | 'refused';

/** Whether an operation's fields outside its path go in the query (GET, DELETE), rather than a JSON body. */
export function fieldsInQuery(method: HttpRoute['method']): boolean {
  return method === 'GET' || method === 'DELETE';
}

/** An operation, its result's type given first: `operation<VariableSummary[]>()({...})`. */
function operation<Result>() {
  return <Args extends unknown[], Request extends z.ZodObject, Hosted extends HostedBehaviour>(
    definition: Omit<Operation<Args, Request, Result, Hosted>, 'result'>,
  ): Operation<Args, Request, Result, Hosted> => definition;
}

const machine = { name: MachineName };
/** A tag filter in a query: `key=value`, key first (tag keys hold no `=`). */
const TagPair = z.string().regex(/^[^=]+=/, 'a tag filter is key=value');

/** The tags a list's `key=value` filters ask for. */
export function tagsOf(pairs: string[]): Record<string, string> {
  return Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

export const OPERATIONS = {
  /** Machines carrying every given tag, newest first, with their details; `here`: only those this server runs (in a cluster, this node). */
  list: operation<MachineInfo[]>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machines',
    request: z.object({ tag: z.array(TagPair).default([]), here: z.stringbool().optional() }),
    args: (tags: Record<string, string> = {}, options: { here?: boolean } = {}) => ({
      tag: Object.entries(tags).map(([key, value]) => `${key}=${value}`),
      ...(options.here ? { here: 'true' } : {}),
    }),
    field: 'machines',
    what: 'list machines with their details',
    hosted: 'emulated',
  }),
  /** A machine's details. */
  get: operation<MachineInfo>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machine/{name}',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    what: 'read machine details',
    hosted: 'emulated',
  }),
  /** Deletes a machine with all its state and files. */
  delete: operation<true>()({
    method: 'DELETE',
    right: 'own',
    path: '/v1/machine/{name}',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    field: 'deleted',
    what: 'delete machines',
    hosted: 'refused',
  }),
  /** Stops the running instruction and cancels what waits; the state is kept. */
  interrupt: operation<InterruptResult>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/interrupt',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    what: 'interrupt machines',
    hosted: 'emulated',
  }),
  /** Swaps the machine out to disk now. */
  swap: operation<MachineInfo>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/swap',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    what: 'swap machines out',
    hosted: 'refused',
  }),
  /** The machine's variables: name, type, a short repr. */
  variables: operation<VariableSummary[]>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machine/{name}/variables',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    field: 'variables',
    what: 'list variables',
    hosted: 'emulated',
  }),
  /** One variable's full repr (bounded). */
  variable: operation<VariableDetail>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machine/{name}/variables/{variable}',
    request: z.object({ ...machine, variable: VariableName }),
    args: (name: string, variable: string) => ({ name, variable }),
    what: 'show variables',
    hosted: 'emulated',
  }),
  /** The instructions the machine ran, oldest first (the last `last`). */
  history: operation<HistoryEntry[]>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machine/{name}/history',
    request: z.object({ ...machine, last: z.coerce.number().pipe(HistoryLast).optional() }),
    args: (name: string, last?: number) => ({ name, last }),
    field: 'history',
    what: 'keep a history',
    hosted: 'emulated',
  }),
  /** Pyodide packages for sandbox machines, pip for python ones, into the machine only; answers what was installed. */
  installPackages: operation<string>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/packages',
    request: z.object({ ...machine, packages: Packages }),
    args: (name: string, packages: string[]) => ({ name, packages }),
    field: 'installed',
    what: 'install packages',
    hosted: 'refused',
  }),
  /** A folder inside the machine (its working directory when `path` is empty). */
  listFiles: operation<FileListing>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machine/{name}/files',
    // Empty: the machine's working directory.
    request: z.object({ ...machine, path: z.string().max(4096).default('') }),
    args: (name: string, path?: string) => ({ name, path }),
    what: 'list files',
    hosted: 'emulated',
  }),
  /** A file inside the machine, as base64. */
  readFile: operation<FileContent>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machine/{name}/files/content',
    request: z.object({ ...machine, path: FilePath }),
    args: (name: string, path: string) => ({ name, path }),
    what: 'read files',
    hosted: 'emulated',
  }),
  /** Writes a file inside the machine, making its folders. */
  writeFile: operation<WrittenFile>()({
    method: 'PUT',
    right: 'run',
    path: '/v1/machine/{name}/files/content',
    request: z.object({ ...machine, path: FilePath, content: z.string(), encoding: FileEncoding.default('utf8') }),
    args: (name: string, path: string, content: string, encoding: FileEncoding = 'utf8') => ({ name, path, content, encoding }),
    what: 'write files',
    hosted: 'emulated',
  }),
  /** A new machine with this one's state now; its tags plus `forked_from` and `tags`. */
  fork: operation<MachineInfo>()({
    method: 'POST',
    right: 'read',
    path: '/v1/machine/{name}/fork',
    // The fork's tags, on top of the origin's; the folder it works in, when not the origin's.
    request: z.object({ ...machine, ...ForkBody.shape }),
    args: (name: string, options: z.input<typeof ForkBody> = {}) => ({ name, ...options }),
    what: 'fork machines',
    hosted: 'refused',
  }),
  /** Changes a machine's tags and the host folder it works in; a warm machine that moves is swapped out first and comes back there. */
  update: operation<MachineInfo>()({
    method: 'POST',
    right: 'own',
    path: '/v1/machine/{name}/update',
    request: z.object({ ...machine, ...MachineUpdate.shape }),
    args: (name: string, change: z.input<typeof MachineUpdate>) => ({ name, ...change }),
    what: 'change machines',
    hosted: 'refused',
  }),
  /** Takes a checkpoint of the machine's state now. */
  checkpoint: operation<CheckpointInfo>()({
    method: 'POST',
    right: 'own',
    path: '/v1/machine/{name}/checkpoints',
    request: z.object({ ...machine, label: CheckpointLabel.optional() }),
    args: (name: string, label?: string) => ({ name, label }),
    what: 'take checkpoints',
    hosted: 'refused',
  }),
  /** The machine's checkpoints, oldest first: named ones, and the newest automatic ones. */
  checkpoints: operation<CheckpointInfo[]>()({
    method: 'GET',
    right: 'read',
    path: '/v1/machine/{name}/checkpoints',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    field: 'checkpoints',
    what: 'keep checkpoints',
    hosted: 'refused',
  }),
  /** Deletes a checkpoint (by id or label). */
  deleteCheckpoint: operation<true>()({
    method: 'DELETE',
    right: 'own',
    path: '/v1/machine/{name}/checkpoints/{checkpoint}',
    request: z.object({ ...machine, checkpoint: CheckpointRef }),
    args: (name: string, checkpoint: string) => ({ name, checkpoint }),
    field: 'deleted',
    what: 'keep checkpoints',
    hosted: 'refused',
  }),
  /** Returns the machine to a checkpoint (by id or label); what runs is interrupted first. */
  rollback: operation<RollbackResult>()({
    method: 'POST',
    right: 'own',
    path: '/v1/machine/{name}/rollback',
    request: z.object({ ...machine, checkpoint: CheckpointRef }),
    args: (name: string, checkpoint: string) => ({ name, checkpoint }),
    what: 'roll machines back',
    hosted: 'refused',
  }),
  /** Moves a machine made on an older runtime (a sandbox machine on an older Pyodide) onto the newest, keeping a checkpoint of the state it leaves to roll back to. */
  upgrade: operation<UpgradeResult>()({
    method: 'POST',
    right: 'own',
    path: '/v1/machine/{name}/upgrade',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    what: 'upgrade machines',
    hosted: 'refused',
  }),
  /** Clears the namespace (every variable, function, import); files and packages stay. */
  reset: operation<ResetResult>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/reset',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    what: 'reset machines',
    hosted: 'emulated',
  }),
  /** Type, signature and docstring of a variable or a dotted path from one; nothing is called. */
  inspect: operation<ObjectInfo>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/inspect',
    request: z.object({ ...machine, expression: DottedName }),
    args: (name: string, expression: string) => ({ name, expression }),
    what: 'inspect objects',
    hosted: 'emulated',
  }),
  /** Whether `code` is a whole statement, for an interactive prompt. */
  isComplete: operation<Completeness>()({
    method: 'POST',
    right: 'read',
    path: '/v1/machine/{name}/is-complete',
    request: z.object({ ...machine, code: z.string() }),
    args: (name: string, code: string) => ({ name, code }),
    field: 'status',
    what: 'check code',
    hosted: 'emulated',
  }),
  /** Starts the machine's IPython shell, as a Jupyter kernel does (IPython's names, syntax and tracebacks from here on, across swaps too); answers whether the machine has IPython. */
  startIPython: operation<boolean>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/ipython',
    request: z.object(machine),
    args: (name: string) => ({ name }),
    field: 'available',
    what: 'start IPython',
    hosted: 'refused',
  }),
  /** A Jupyter front end's comm message, handled by the comm's code on the machine (ipywidgets); answers what that printed and displayed. */
  comm: operation<CommDelivery>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/comm',
    request: z.object({ ...machine, message: FrontEndComm }),
    args: (name: string, message: z.input<typeof FrontEndComm>) => ({ name, message }),
    what: 'take comm messages',
    hosted: 'refused',
  }),
  /** What the name before the cursor can become, from the machine's namespace. */
  complete: operation<Completions>()({
    method: 'POST',
    right: 'run',
    path: '/v1/machine/{name}/complete',
    request: z.object({ ...machine, ...CodeAndCursor }).refine(cursorInCode, CURSOR_PAST_CODE),
    args: (name: string, code: string, cursor?: number) => ({ name, code, cursor }),
    what: 'complete code',
    hosted: 'refused',
  }),
};

export type Operations = typeof OPERATIONS;
export type OperationName = keyof Operations;
export type OperationArgs<K extends OperationName> = Parameters<Operations[K]['args']>;
/** A request as a caller makes it (defaults not yet filled in); the server, or the in-process client, checks it. */
export type OperationInput<K extends OperationName> = z.input<Operations[K]['request']>;
/** A request as it was checked. */
export type OperationRequest<K extends OperationName> = z.output<Operations[K]['request']>;
export type OperationResult<K extends OperationName> = NonNullable<Operations[K]['result']>;
/** The operations a backend with only the ForeverVM protocol does another way. */
export type EmulatedOperation = { [K in OperationName]: Operations[K]['hosted'] extends 'emulated' ? K : never }[OperationName];
/** Every operation as a method: its arguments, its result. */
export type OperationCalls = { [K in OperationName]: (...args: OperationArgs<K>) => Promise<OperationResult<K>> };
export const OPERATION_NAMES = Object.keys(OPERATIONS) as OperationName[];

/* eslint-disable @typescript-eslint/no-unsafe-declaration-merging -- the class makes the methods the interface below declares, from the table */
/**
 * A client with a method per operation of the table, each making its request from its arguments
 * and handing it to `carry`, which the subclass defines: over HTTP, or in this process.
 */
export abstract class OperationClient {
  constructor() {
    for (const op of OPERATION_NAMES) {
      const makeRequest = OPERATIONS[op].args as (...args: unknown[]) => OperationInput<typeof op>;
      Object.defineProperty(this, op, { value: (...given: unknown[]) => this.carry(op, makeRequest(...given)), writable: true, configurable: true });
    }
  }

  /** Carries out operation `op` with the request its caller made. */
  protected abstract carry<K extends OperationName>(op: K, request: OperationInput<K>): Promise<OperationResult<K>>;
}
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- it only says which methods the constructor made
export interface OperationClient extends OperationCalls {}
/* eslint-enable @typescript-eslint/no-unsafe-declaration-merging */
