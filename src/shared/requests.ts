/**
 * Every request shape and limit, once: the HTTP API, the WebSocket REPL, the MCP tools, the CLI
 * and the machine manager all validate with these schemas, and their types are derived from them.
 * ForeverVM's shapes keep its snake_case names; Perennial's own use camelCase.
 */
import { ENGINE_NAMES } from '../engines/descriptors.ts';
import { z } from 'zod';
import { CodedError } from '../platform/coded-error.ts';
import { LockRecord } from '../platform/data-dir-lock.ts';

/** A request the caller can fix (unknown engine, bad tag, a limit passed...). */
export class InvalidRequestError extends CodedError {
  static override readonly errorCode: string = 'InvalidRequest';
}

/** `value` as `schema` describes it, or an InvalidRequestError that says what is wrong. */
export function parseRequest<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new InvalidRequestError(`Invalid request: ${problemsOf(parsed.error)}`);
}

/** What is wrong with a value, each problem led by where it is: `tags.x: ...; memoryMb: ...`. */
export function problemsOf(error: z.ZodError): string {
  const problems = error.issues.map((issue) => {
    // A bad record key's own message is nested one level down, and it names the key itself.
    const badKey = issue.code === 'invalid_key';
    const path = badKey ? issue.path.slice(0, -1) : issue.path;
    return (path.length ? `${path.join('.')}: ` : '') + (badKey ? issue.issues.map((inner) => inner.message).join(', ') : issue.message);
  });
  return problems.join('; ');
}

/** An engine's name: one of the engines' registry (src/engines/descriptors.ts). */
export const EngineName = z.enum(ENGINE_NAMES);
export type EngineName = z.infer<typeof EngineName>;

/** ForeverVM's names: 16 URL-safe characters; any 1-64 of them are accepted. */
export const MachineName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a machine name is 1 to 64 letters, digits, _ or -');

export const MAX_TAGS = 32;
export const Tags = z
  .record(
    z.string().regex(/^[A-Za-z0-9._:/-]{1,128}$/, { error: (issue) => `bad tag key ${JSON.stringify(issue.input)}: use 1 to 128 letters, digits or ._:/-` }),
    z.string().max(256, 'a tag value is at most 256 characters'),
  )
  .refine((tags) => Object.keys(tags).length <= MAX_TAGS, `at most ${MAX_TAGS} tags per machine`);
/** Tags to filter by: any strings (a tag that no machine can carry matches none). */
export const TagFilter = z.record(z.string(), z.string());

export const MemoryMb = z
  .number()
  .int('memory is a whole number of MiB')
  .min(64, 'memory is at least 64 MiB')
  .max(1024 * 1024, 'memory is at most 1048576 MiB')
  .describe('Memory cap in MiB (64 to 1048576)');
/** The longest timeout but none: a day. */
export const LONGEST_TIMEOUT_SECONDS = 24 * 3600;
/** How long an instruction may run before it is interrupted: 0 for no limit, else at most a day. */
export const TimeoutSeconds = z
  .number()
  .min(0, 'a timeout is 0 (no limit) or a number of seconds')
  .max(LONGEST_TIMEOUT_SECONDS, `a timeout is at most ${LONGEST_TIMEOUT_SECONDS} seconds (a day); 0 is no limit`);
/** Largest request body accepted (code, files), and WebSocket message; beyond it the answer is 413. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Deepest nesting of arrays and objects a JSON body may have (what parses it, and the SDK, recurse). */
export const MAX_JSON_DEPTH = 128;
/** Largest file read from a machine at once. */
export const MAX_FILE_BYTES = 10 * 1024 * 1024;
/** A file path inside a machine. */
export const FilePath = z.string().min(1).max(4096);
export const VariableName = z.string().min(1).max(256);
/** A variable, or a dotted path from one (or from a builtin) to an attribute: `df.groupby`. */
export const DottedName = z.string().min(1).max(1000);
export const HistoryLast = z.number().int().positive().max(1000);
/** A package name with optional extras and version specifier: nothing pip could take for an option. */
const REQUIREMENT = /^[A-Za-z0-9][A-Za-z0-9._\-[\],<>=!~ ]{0,199}$/;
/** A wheel, a source archive or a project folder on the machine's computer: a path with a separator, or a file pip installs. */
const LOCAL_PACKAGE = /^(?!-)(?=.*(?:[\\/]|\.whl$|\.zip$|\.tar\.gz$))[^\0\r\n]{1,4096}$/;
/** A requirements file to install (`-r FILE`), or a folder of wheels to find the packages in (`--find-links DIR`). */
const PIP_SOURCE = /^(-r|--requirement|-f|--find-links) +([^\s-][^\0\r\n]{0,4095})$/;

/**
 * What to install: a package name (with extras and a version specifier), a local wheel, archive
 * or project folder (relative to the machine's working directory), `-r requirements.txt` or
 * `--find-links DIR`; a sandbox machine takes names only.
 */
export const PackageSpec = z.string().refine((spec) => [REQUIREMENT, LOCAL_PACKAGE, PIP_SOURCE].some((form) => form.test(spec)), {
  error: (issue) =>
    `not a package to install: ${JSON.stringify(issue.input)} (a name with optional extras and version specifier, a wheel or a folder, -r FILE or --find-links DIR)`,
});

/** Whether a package spec names a package (to find in an index), rather than a file, a folder or an option. */
export function isPackageName(spec: string): boolean {
  return REQUIREMENT.test(spec) && !LOCAL_PACKAGE.test(spec);
}

/** A package spec as pip's command line takes it: `-r FILE` is two arguments. */
export function pipArguments(spec: string): string[] {
  const source = PIP_SOURCE.exec(spec);
  return source ? [source[1]!, source[2]!] : [spec];
}
export const Packages = z.array(PackageSpec).min(1).max(64);
export const FileEncoding = z.enum(['utf8', 'base64']);
export type FileEncoding = z.infer<typeof FileEncoding>;

/** File content as the kernel takes it (base64), from text or base64. */
export function base64Content(content: string, encoding: FileEncoding): string {
  return encoding === 'utf8' ? Buffer.from(content, 'utf8').toString('base64') : content;
}

/** What a new machine is made with. */
/** A name a person gives a new machine: one of ForeverVM's, read on a command line as no option. */
export const NewMachineName = MachineName.regex(/^[A-Za-z0-9]/, 'a machine name starts with a letter or digit');

export const NewMachineOptions = z.object({
  /** Chosen by the caller; else a readable one is made (`brave-otter`). */
  name: NewMachineName.optional(),
  engine: EngineName.optional(),
  tags: Tags.optional(),
  memoryMb: MemoryMb.optional(),
  /** python engine: the interpreter. */
  python: z.string().min(1).max(4096).optional(),
  /** sandbox engine: a host folder mounted at /workspace (read-only unless `workspaceWritable`). */
  workspace: z.string().min(1).max(4096).optional(),
  workspaceWritable: z.boolean().optional(),
  /**
   * A host folder the machine works in (a notebook's), on either engine: its working directory,
   * where relative paths and imports go; a sandbox machine has it mounted read-write at the same
   * path and reaches nothing else of the host.
   */
  workdir: z.string().min(1).max(4096).optional(),
  /** sandbox engine: let the machine reach the network. */
  network: z.boolean().optional(),
});
export type NewMachineOptions = z.infer<typeof NewMachineOptions>;

/**
 * How many figures one result shows inline; the rest go as links only, since a few base64 PNGs
 * of 70-100 KB overflow some clients. One keeps the common single plot in view.
 */
export const DEFAULT_INLINE_IMAGES = 1;
/** The inline image cap as a client writes it (a flag, a URL query): 0 to 100. */
const InlineImageCount = z
  .string()
  .regex(/^(\d{1,2}|100)$/, { error: (issue) => `expected a whole number from 0 to 100, got ${JSON.stringify(issue.input)}` })
  .transform(Number);

/** The inline image cap a client asked for, or an error that says what is allowed. */
export function parseInlineImages(value: string): number {
  const parsed = z.object({ inlineImages: InlineImageCount }).safeParse({ inlineImages: value });
  if (!parsed.success) throw new InvalidRequestError(problemsOf(parsed.error));
  return parsed.data.inlineImages;
}

/** A yes or no in a URL's query. */
/** Seconds, as a query gives them: a call's time to answer (`answerWithin`), 0 for none. */
const QuerySeconds = z
  .string()
  .regex(/^\d{1,5}(\.\d+)?$/, { error: (issue) => `expected a number of seconds, got ${JSON.stringify(issue.input)}` })
  .transform(Number);

const QueryFlag = z.enum(['true', 'false', '1', '0']).transform((value) => value === 'true' || value === '1');

/**
 * What an MCP connection over HTTP chooses in its URL's query, as `perennial mcp` does with its
 * flags: how results show figures (`inlineImages`), how soon a call that runs code answers
 * (`answerWithin`, seconds), and the machines create-python-repl makes unless the call says
 * otherwise (`/mcp?engine=python&python=C%3A%5CPython312%5Cpython.exe`).
 */
export const McpConnectionQuery = z
  .object({
    inlineImages: InlineImageCount.optional(),
    answerWithin: QuerySeconds.optional(),
    engine: EngineName.optional(),
    python: NewMachineOptions.shape.python,
    workspace: NewMachineOptions.shape.workspace,
    workspaceWritable: QueryFlag.optional(),
    network: QueryFlag.optional(),
  })
  .transform(({ inlineImages, answerWithin, ...machineDefaults }) => ({ inlineImages, answerWithin, machineDefaults }));

// ---- ForeverVM HTTP and WebSocket requests -------------------------------------------------------

/** `POST /v1/machine/new`: ForeverVM's `tags` and `memory_mb`, plus Perennial's options. */
export const NewMachineBody = z
  .object({
    tags: Tags.optional(),
    memory_mb: MemoryMb.optional(),
    name: NewMachineOptions.shape.name,
    engine: EngineName.optional(),
    python: NewMachineOptions.shape.python,
    workspace: NewMachineOptions.shape.workspace,
    workspace_writable: z.boolean().optional(),
    workdir: NewMachineOptions.shape.workdir,
    network: z.boolean().optional(),
  })
  .transform(({ memory_mb, workspace_writable, ...rest }): NewMachineOptions => ({ ...rest, memoryMb: memory_mb, workspaceWritable: workspace_writable }));

/** The body of `POST /v1/machine/new` for `options`, without the fields left unset. */
export function newMachineBody({ memoryMb, workspaceWritable, ...rest }: NewMachineOptions): z.input<typeof NewMachineBody> {
  return JSON.parse(JSON.stringify({ ...rest, memory_mb: memoryMb, workspace_writable: workspaceWritable })) as z.input<typeof NewMachineBody>;
}

export const ListBody = z.object({ tags: TagFilter.optional() });

/** `POST /v1/server/stop`: optionally, the process the data dir goes to (`perennial serve` taking over), or (a cluster's node) to hand every machine to the other nodes first. */
export const StopRequest = z.object({ handOverTo: LockRecord.optional(), drain: z.boolean().optional() });
export type StopRequest = z.infer<typeof StopRequest>;

/** `{"code": str, "timeout_seconds": int}`; a missing `timeout_seconds` means the server's default, 0 (Perennial's) no limit. */
export const Instruction = z.object({ code: z.string(), timeout_seconds: TimeoutSeconds.optional() });
export type Instruction = z.infer<typeof Instruction>;

export const ExecBody = z.object({ instruction: Instruction, interrupt: z.boolean().optional() });

/**
 * What a client sends on the WebSocket REPL: ForeverVM's `exec`, with two Perennial extensions:
 * `input: true` says the client answers the instruction's `input()` (`input_request`) with an
 * `input_reply` (the answer, or why there is none), and `displays: true` that it wants what the
 * instruction displays as it displays it (`display` messages; the result has them all anyway).
 */
export const ReplExecMessage = z.object({
  type: z.literal('exec'),
  instruction: Instruction,
  request_id: z.number().int().nonnegative(),
  input: z.boolean().optional(),
  displays: z.boolean().optional(),
});
export type ReplExecMessage = z.infer<typeof ReplExecMessage>;
export const ReplInputReply = z.union([
  z.object({ type: z.literal('input_reply'), instruction_id: z.number().int(), n: z.number().int(), value: z.string().max(1_000_000) }),
  z.object({ type: z.literal('input_reply'), instruction_id: z.number().int(), n: z.number().int(), error: z.string().max(2000) }),
]);
export type ReplInputReply = z.infer<typeof ReplInputReply>;
export const ReplClientMessage = z.union([ReplExecMessage, ReplInputReply]);
export type ReplClientMessage = z.infer<typeof ReplClientMessage>;

// ---- Perennial's requests ----------------------------------------------------------------------

/** `POST /v1/machine/{name}/fork`: tags for the fork, on top of the origin's. */
export const ForkBody = z.object({ tags: Tags.optional(), workdir: NewMachineOptions.shape.workdir });
/**
 * A change to a machine: tags set (a null value removes one), and the host folder it works in
 * (null: a folder of its own again).
 */
export const MachineUpdate = z.object({
  tags: z.record(z.string(), z.string().nullable()).optional(),
  workdir: z.string().min(1).max(4096).nullable().optional(),
});
export type MachineUpdate = z.infer<typeof MachineUpdate>;
export type ForkBody = z.infer<typeof ForkBody>;
/** A checkpoint's label: not a bare number, which would read as a checkpoint's id. */
/** A Jupyter front end's comm message to a machine (`comm_info`: only the comms open, for `target_name` when given); buffers in base64. */
export const FrontEndComm = z.object({
  msg_type: z.enum(['comm_open', 'comm_msg', 'comm_close', 'comm_info']),
  content: z.record(z.string(), z.unknown()).default({}),
  metadata: z.record(z.string(), z.unknown()).default({}),
  buffers: z.array(z.string()).max(64).default([]),
});
export type FrontEndComm = z.infer<typeof FrontEndComm>;

export const CheckpointLabel = z
  .string()
  .min(1)
  .max(128)
  .refine((label) => !/^\d+$/.test(label), 'a checkpoint label cannot be a bare number (that is how ids look)');
export const CheckpointBody = z.object({ label: CheckpointLabel.optional() });
/** A checkpoint by its id or its label. */
export const CheckpointRef = z.string().min(1).max(128);
/** Code and a cursor in it (a UTF-16 offset, as editors count; the end of the code when left out). */
export const CodeAndCursor = { code: z.string(), cursor: z.number().int().min(0).optional() };
/** What a request with a cursor is refined with: the cursor within its code. */
export function cursorInCode({ code, cursor }: { code: string; cursor?: number }): boolean {
  return cursor === undefined || cursor <= code.length;
}
export const CURSOR_PAST_CODE = { message: 'the cursor is past the end of the code', path: ['cursor'] };
export const CompleteBody = z
  .object(CodeAndCursor)
  .refine(cursorInCode, CURSOR_PAST_CODE)
  .transform(({ code, cursor }) => ({ code, cursor: cursor ?? code.length }));
