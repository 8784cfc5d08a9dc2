import type { Right } from './machine-rights.ts';
import type { EngineName } from './requests.ts';

/**
 * Wire types shared by the machines layer, the server, the client and the extension.
 * ForeverVM shapes follow `forevervm-api.md` exactly (snake_case); Perennial's own extensions
 * use camelCase and live below them.
 */

export interface ImageData {
  mimeType: 'image/png';
  /** Base64, no data: prefix. */
  data: string;
}

/** Something a swap could not keep, named so that nothing disappears silently. */
export interface LostItem {
  name: string;
  reason: string;
}

/**
 * What a cell displayed (`display(obj)`, IPython's display objects) or its value as IPython shows
 * it (`result`): a MIME bundle, base64 for binary types. `afterOutput`: how many of the
 * instruction's output chunks came before it, so that a surface can show it in its place.
 */
export interface DisplayBundle {
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /** `display_id`: a later bundle with `update` replaces the one shown under that id. */
  transient?: { display_id?: string };
  update?: boolean;
  result?: boolean;
  /** IPython's pager (`obj?`): a Jupyter front end shows it in its pager (a `page` payload), other surfaces as a display. */
  page?: boolean;
  afterOutput: number;
}

/** `clear_output()`: what the cell displayed and printed so far goes (`wait`: when the next comes). */
export interface DisplayClear {
  clear: true;
  wait: boolean;
  afterOutput: number;
}

/**
 * A comm's message to the front end (ipywidgets and other interactive libraries): Jupyter's
 * `comm_open`, `comm_msg` or `comm_close`, its binary buffers in base64. Only a Jupyter front end
 * takes it; other surfaces show the widget's text form, which its display bundle carries.
 */
export interface DisplayComm {
  comm: { msg_type: 'comm_open' | 'comm_msg' | 'comm_close'; content: Record<string, unknown>; metadata: Record<string, unknown>; buffers: string[] };
  afterOutput: number;
}

export type DisplayEntry = DisplayBundle | DisplayClear | DisplayComm;
/** A display entry by itself, not placed among an instruction's output. */
export type Displayed = Omit<DisplayBundle, 'afterOutput'> | Omit<DisplayClear, 'afterOutput'> | Omit<DisplayComm, 'afterOutput'>;

/** What a front end's comm message made the comm's code on the machine print and display, in order, and the comms open then. */
export interface CommDelivery {
  events: Array<{ stream: StreamName; text: string } | { display: Displayed }>;
  comms: Record<string, { target_name: string }>;
}

/** Rich output of an instruction. `png` is ForeverVM's field; the rest are Perennial's. */
export interface ResultData {
  png?: string;
  images?: ImageData[];
  /** What the cell displayed, in order. */
  display?: DisplayEntry[];
  lost?: LostItem[];
  /** Things the user should know about this machine, e.g. that it came back from a snapshot. */
  notices?: string[];
  /** The output reached the cap (`limit` bytes): `dropped` more bytes were left out, and a marker says so in the output. */
  truncated?: { limit: number; dropped: number };
  /** An error's traceback as IPython shows it in Jupyter (coloured, cells as `In [n]`), where the machine has IPython: its lines. */
  traceback?: string[];
  /** What the cell asked a Jupyter front end to put in the next cell (IPython's `set_next_input`). */
  next_input?: { text: string; replace: boolean };
  [key: string]: unknown;
}

export type ExecResult = { value: string | null; data: ResultData | null; runtime_ms: number } | { error: string; data?: ResultData; runtime_ms: number };

export type StreamName = 'stdout' | 'stderr';

/** A question a running cell asks: `input(prompt)`, or `getpass(prompt)` with `password`. */
export interface InputRequest {
  prompt: string;
  password: boolean;
}

/**
 * Answers a running cell's question. Rejects when it cannot, with the reason the cell's EOFError
 * gives; `signal` aborts when the cell ended meanwhile (an interrupt, a timeout) and nobody waits.
 */
export type InputAnswerer = (request: InputRequest, signal: AbortSignal) => Promise<string>;

/**
 * What whoever sent an instruction hears from it besides its output: its questions (`onInput`;
 * without it they raise EOFError saying that nobody can answer) and, while it runs, what it
 * displays (`onDisplay`; its result carries them all as well).
 */
export interface SenderListeners {
  onInput?: InputAnswerer;
  onDisplay?: (entry: DisplayEntry) => void;
}

/** One line of output (without its newline), or a partial line flushed after a pause. */
export interface OutputChunk {
  stream: StreamName;
  data: string;
  seq: number;
}

export interface ForeverVMMachine {
  name: string;
  created_at: string;
  running: boolean;
  has_pending_instruction: boolean;
  expires_at: string | null;
  tags: Record<string, string>;
}

// ---- Perennial extensions ---------------------------------------------------------------------

export type MachineState = 'warm' | 'busy' | 'swapped';

/** What a machine's Python runs on: the interpreter's version, and for a sandbox machine Pyodide's. */
export interface MachineRuntime {
  python: string;
  pyodide?: string;
}

export interface MachineInfo {
  name: string;
  createdAt: string;
  tags: Record<string, string>;
  /** 'forevervm' for a machine of the hosted service, which tells nothing more. */
  engine: EngineName | 'forevervm';
  memoryMb: number;
  state: MachineState;
  /** The seq the next instruction will get. */
  nextSeq: number;
  pendingInstructions: number;
  lastUsedAt: string;
  snapshot: SnapshotInfo | null;
  /** What its Python runs on; null while not known (a machine of an earlier build that has not run since). */
  runtime: MachineRuntime | null;
  /** The newer runtime `upgrade` would move it to (a sandbox machine made on an older Pyodide); null when there is none. */
  upgradeTo: MachineRuntime | null;
  /** Plain-words warnings: network isolation off, why the machine cannot be swapped out... */
  warnings: string[];
  /** The host folder it works in (a notebook's); absent: a folder of its own. */
  workdir?: string;
  /** While swapped out by this server: when, and why (idle, memory, the warm cap, asked). */
  swappedOut?: { at: string; reason: string };
  /**
   * In a cluster's listings: the URL of the node that runs it (its details as that node gives
   * them, or as it last committed them when it does not answer), or null when none does now (the
   * next use takes it).
   */
  node?: string | null;
  /** On a team's server: whose it is, what the caller may do to it, and (its owner sees) whom it is shared with. */
  access?: MachineAccess;
}

/** A machine's owner and shares, as a caller on a team's server sees them. */
export interface MachineAccess {
  owner: string;
  right: Right;
  shares: Array<{ with: string; right: 'read' | 'run' }>;
}

/** What `/v1/events` streams: every change to the machines, as it happens. */
export type MachineEvent =
  | { type: 'created'; machine: MachineInfo }
  | { type: 'deleted'; name: string }
  | { type: 'state'; name: string; state: MachineState }
  /** An instruction finished; its result is one request away. */
  | { type: 'instruction'; name: string; seq: number; error: boolean }
  /** The machine's state was saved (`bytes`: its snapshot). Called `checkpoint` on the wire since 0.1: clients read that name. */
  | { type: 'checkpoint'; name: string; bytes: number }
  | { type: 'error'; name: string; message: string };

export interface SnapshotInfo {
  /** When the snapshot was taken (RFC 3339). */
  at: string;
  /** The seq of the first instruction whose effects the snapshot does not hold. */
  seq: number;
  bytes: number;
}

export interface VariableSummary {
  name: string;
  type: string;
  /** Short repr, at most 200 characters. */
  repr: string;
  /** len() when the object has one. */
  size?: number;
  shape?: number[];
}

export interface VariableDetail {
  name: string;
  type: string;
  repr: string;
  truncated: boolean;
  size?: number;
}

export interface ObjectInfo {
  name: string;
  type: string;
  signature: string | null;
  doc: string | null;
  /** Its source (IPython's `??`), where Python has it; absent from an earlier build's kernel. */
  source?: string | null;
  /** The file it was defined in (`<cell N>` for a cell). */
  file?: string | null;
}

/** A named, listed state of a machine, to roll back to. */
export interface CheckpointInfo {
  /** A number, unique within the machine. */
  id: string;
  label: string | null;
  /** The first instruction whose effects it does not hold. */
  seq: number;
  /** When it was taken (RFC 3339). */
  at: string;
  /** What it added on disk. */
  bytes: number;
  /** Taken by Perennial after a change (kept for the newest few), not asked for. */
  auto: boolean;
}

/** `POST /v1/machine/{name}/rollback`: the checkpoint returned to, and the history entry that records it. */
export interface RollbackResult {
  checkpoint: CheckpointInfo;
  seq: number;
  /** What the rollback could not do, in words: the state it left unsaved, a link it could not make again. None from a server before 0.2.2. */
  notes?: string[];
}

/** What a machine's upgrade did: the runtime it left and the one it runs now, what it could not carry, the checkpoint to roll back to. */
export interface UpgradeResult {
  from: MachineRuntime;
  to: MachineRuntime;
  lost: LostItem[];
  /** The state before the upgrade, on the runtime it left. */
  checkpoint: CheckpointInfo;
  /** The instruction that records the upgrade in the machine's history. */
  seq: number;
}

/** What `reset` cleared: the names the cells had made. */
export interface ResetResult {
  cleared: number;
}

export interface FileListing {
  path: string;
  entries: Array<{ name: string; type: 'file' | 'dir' | 'link'; size: number; mtime: number }>;
}

export interface FileContent {
  path: string;
  size: number;
  /** Base64. */
  content: string;
}

export interface HistoryEntry {
  seq: number;
  code: string;
  startedAt: string;
  result?: ExecResult;
  stdout?: string;
  stderr?: string;
}

/** An engine of the local server: available or not, and what its machines should know. */
export interface EngineStatus {
  name: EngineName;
  available: boolean;
  /** Version, isolation, or why the engine is unavailable. */
  detail: string;
  /** Something a user of this engine's machines should know (e.g. network isolation is off). */
  warning: string | null;
  /** Processes kept ready, booted ahead for a new machine or a swap-in (the sandbox pool starts empty). */
  ready: number;
}

/** `GET /v1/status`. */
export interface StatusReport {
  version: string;
  pid: number;
  dataDir: string;
  /** `upgradable`: machines on an older runtime than the newest this Perennial ships (`upgradeTo`). */
  machines: { total: number; warm: number; swapped: number; upgradable: number };
  defaultEngine: EngineName;
  engines: EngineStatus[];
  /** Which machines stay warm, in words (absent from servers before 0.2.2). */
  warmRule?: string;
  /** The machines this server swapped out that are still out, the latest first (at most 10), with why. */
  swappedOut?: Array<{ name: string; at: string; reason: string }>;
  /** A cluster's node: the cluster it is a node of (`machines` above are this node's). */
  cluster?: ClusterStatus;
}

/** The cluster a node serves, as its directory has it now. */
export interface ClusterStatus {
  /** The PostgreSQL database (without its password) and the bucket. */
  database: string;
  store: string;
  /** This node's URL. */
  node: string;
  /** Every node entered, the earliest first: live while its lease runs; `machines`, how many it runs. */
  nodes: Array<{ url: string; version: string; live: boolean; machines: number }>;
  /** The cluster's machines (deleted ones left out), whichever node runs them or none. */
  machines: number;
}

/** `POST /v1/machine/{name}/interrupt`: instructions cancelled before they ran, and whether one was stopped. */
export interface InterruptResult {
  cancelled: number;
  interrupted: boolean;
}

/** Whether code is a whole statement, as the interactive prompt asks. */
export type Completeness = 'complete' | 'incomplete' | 'invalid';

/** `PUT /v1/machine/{name}/files/content`. */
export interface WrittenFile {
  path: string;
  size: number;
}

/**
 * What the name before the cursor can become, from the live namespace: each match replaces the
 * code from `start` to the cursor; a callable's ends in "(".
 */
export interface Completions {
  matches: string[];
  start: number;
}

export function isErrorResult(result: ExecResult): result is Extract<ExecResult, { error: string }> {
  return 'error' in result;
}

/** The instruction's figures (pyplot's and a value's `_repr_png_`): `data.images`, or ForeverVM's single `data.png`. */
export function figureImages(result: ExecResult): ImageData[] {
  const data = result.data;
  return data?.images ?? (data?.png ? [{ mimeType: 'image/png', data: data.png }] : []);
}

/** The instruction's images: its figures, then the PNG images it displayed. */
export function resultImages(result: ExecResult): ImageData[] {
  const displayed = (result.data?.display ?? []).flatMap((entry): ImageData[] => {
    const png = 'data' in entry ? entry.data['image/png'] : undefined;
    return typeof png === 'string' ? [{ mimeType: 'image/png', data: png }] : [];
  });
  return [...figureImages(result), ...displayed];
}

/** The text one stream wrote, its chunks joined line by line. */
export function streamText(chunks: OutputChunk[], stream: StreamName): string {
  return chunks
    .filter((c) => c.stream === stream)
    .map((c) => c.data)
    .join('\n');
}

// ---- ForeverVM HTTP and WebSocket messages ----------------------------------------------------

/** The body of a ForeverVM error answer (the `ForeverVMError` class carries it). */
export interface ForeverVMErrorBody {
  code: string;
  id: string | null;
}

export interface ExecResponse {
  instruction_seq: number;
  machine: string;
  /** Present (true) only when something was interrupted. */
  interrupted?: true;
}

export interface ResultResponse {
  instruction_id: number;
  result: ExecResult;
}

/**
 * Perennial's request header on `stream-result`: the server then writes a blank line after 10 s of
 * silence, so that an instruction that prints nothing for long keeps its stream open (fetch
 * gives up on a body silent for 5 minutes). Without it the stream is plain NDJSON.
 */
export const KEEPALIVE_HEADER = 'perennial-keepalive';

/** A line of `stream-result` NDJSON. */
export type StreamResultLine = { type: 'output'; chunk: OutputChunk; instruction_id: number } | { type: 'result'; instruction_id: number; result: ExecResult };

export type ReplServerMessage =
  | { type: 'connected'; machine_name: string }
  | { type: 'exec_received'; seq: number; request_id: number }
  | { type: 'output'; chunk: OutputChunk; instruction_id: number }
  | { type: 'result'; instruction_id: number; result: ExecResult }
  /** Perennial's: the instruction's `input()` asks (only of a client that sent it with `input: true`). */
  | ({ type: 'input_request'; instruction_id: number; n: number } & InputRequest)
  /** Perennial's: the question `n` needs no answer any more (the instruction ended). */
  | { type: 'input_cancel'; instruction_id: number; n: number }
  /** Perennial's: what the instruction displayed, as it displayed it (only to a client that sent it with `displays: true`). */
  | { type: 'display'; instruction_id: number; entry: DisplayEntry }
  /** ForeverVM's, with Perennial's readable `message` (the server's words: a machine's nearest name, say). */
  | { type: 'error'; code: string; id: string | null; message?: string }
  | { type: 'message'; message: string; level: 'info' | 'warn' | 'error' };
