import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import { ForeverVMError } from '../../shared/forevervm-error.ts';
import type { PerennialClient } from '../../shared/perennial-client.ts';
import { stoppedWithServer } from '../../shared/result-format.ts';
import type { ExecResult, HistoryEntry, OutputChunk } from '../../shared/types.ts';
import { execResult } from '../tools/running.ts';
import { TaskIds } from './task-ids.ts';

export type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

/** A task as both generations of the Tasks protocol show it (`task-methods.ts` gives each its shape). */
export interface TaskView {
  taskId: string;
  status: TaskStatus;
  statusMessage: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Once completed: the tool's result, as a direct call gives it. */
  result?: CallToolResult;
  /** Once failed: the JSON-RPC error the call failed with. */
  error?: { code: number; message: string };
}

/** An instruction as `McpTasks.instruction` answers it. */
export interface InstructionView {
  seq: number;
  /** Its output so far, a line a chunk. */
  chunks: OutputChunk[];
  startedAt: Date;
  /** Once it has ended: its result as a run tool gives it. */
  result?: CallToolResult;
}

/** How a task ended: a tool result (built for the asking connection's figure cap), or a JSON-RPC failure. */
type Ending = { result: (inlineImages: number) => CallToolResult; interrupted?: string } | { error: { code: number; message: string } };

/** Finished tasks kept in memory beyond the running ones; older ones are read again from the history. */
const SETTLED_KEPT = 200;
/** Status notifications while a task's output changes: at most one per this long. */
const OUTPUT_NOTICE_MS = 1000;

/** One task: its work's output and ending, and who listens. */
class Task {
  status: TaskStatus = 'working';
  lastUpdatedAt: Date;
  ending?: Ending;
  readonly settled: Promise<void>;
  /** What the work has written so far, a line a chunk. */
  readonly chunks: OutputChunk[] = [];
  #cancelAsked = false;
  #noticeTimer?: NodeJS.Timeout;

  /** `work` is given what tells the task of each line of output. */
  constructor(
    readonly id: string,
    readonly createdAt: Date,
    work: (output: (chunk: OutputChunk) => void) => Promise<Ending>,
    private readonly changed: (task: Task) => void,
  ) {
    this.lastUpdatedAt = createdAt;
    this.settled = work((chunk) => this.#output(chunk)).then((ending) => this.#end(ending));
    // Whoever waits for it sees a failure to follow the work; nobody waiting is no fault.
    this.settled.catch(() => {});
  }

  /** A line of output: the status says it, and listeners hear of it (not more than once a second). */
  #output(chunk: OutputChunk): void {
    this.chunks.push(chunk);
    this.lastUpdatedAt = new Date();
    this.#noticeTimer ??= setTimeout(() => {
      this.#noticeTimer = undefined;
      if (this.status === 'working') this.changed(this);
    }, OUTPUT_NOTICE_MS);
  }

  /** Marks the task cancelled once its work ends interrupted. */
  askCancel(): void {
    this.#cancelAsked = true;
  }

  view(inlineImages: number): TaskView {
    const base = { taskId: this.id, status: this.status, createdAt: this.createdAt.toISOString(), lastUpdatedAt: this.lastUpdatedAt.toISOString() };
    const ending = this.ending;
    const took = seconds(this.lastUpdatedAt.getTime() - this.createdAt.getTime());
    if (!ending) {
      const running = `Working for ${seconds(Date.now() - this.createdAt.getTime())}`;
      const line = this.chunks.at(-1)?.data;
      return { ...base, statusMessage: line ? `${running}; last output: ${line}` : running };
    }
    if ('error' in ending) return { ...base, statusMessage: ending.error.message, error: ending.error };
    if (this.status === 'cancelled') return { ...base, statusMessage: `Cancelled after ${took}: ${ending.interrupted}` };
    const result = ending.result(inlineImages);
    return { ...base, statusMessage: result.isError ? `Ended with an error after ${took}` : `Finished in ${took}`, result };
  }

  #end(ending: Ending): void {
    clearTimeout(this.#noticeTimer);
    this.ending = ending;
    this.status = 'error' in ending ? 'failed' : this.#cancelAsked && ending.interrupted !== undefined ? 'cancelled' : 'completed';
    this.lastUpdatedAt = new Date();
    this.changed(this);
  }
}

/**
 * The MCP tasks of this server or `perennial mcp` process, shared by all its connections. A task
 * that runs code is an instruction of its machine: its id names the machine and the instruction
 * (`TaskIds`), so any connection can ask for it, and after a restart its ending is read from the
 * machine's history, as long as the history keeps it. Other work (an install) is a task of this
 * process's memory only.
 */
export class McpTasks {
  readonly #ids: TaskIds;
  readonly #tasks = new Map<string, Task>();
  readonly #listeners = new Set<(taskId: string) => void>();
  readonly #stop = new AbortController();

  /** `secret`: what task ids are sealed with (the data dir's token), so that they hold across restarts. */
  constructor(
    private readonly client: PerennialClient,
    secret: string,
  ) {
    this.#ids = new TaskIds(secret);
  }

  /** Queues `code` on machine `name` as a task; answers its id once the machine holds the instruction. */
  async runCode(name: string, code: string, timeoutSeconds: number | undefined): Promise<string> {
    const seq = await this.client.start(name, code, { timeoutSeconds });
    const id = this.#ids.forInstruction(name, seq);
    this.#follow(id, name, seq, new Date());
    return id;
  }

  /** Runs `work` (not an instruction: an install) as a task of this process's memory. */
  runWork(work: (onLine: (line: string) => void) => Promise<CallToolResult>): string {
    const id = this.#ids.fresh();
    const ending = (output: (chunk: OutputChunk) => void) =>
      work((line) => output({ stream: 'stdout', data: line, seq: 0 })).then(
        (result): Ending => ({ result: () => result }),
        (error: Error): Ending => ({ error: { code: ProtocolErrorCode.InternalError, message: error.message } }),
      );
    this.#add(new Task(id, new Date(), ending, (t) => this.#changed(t)));
    return id;
  }

  /** A task as it is now; one this process does not hold is read from its machine. */
  async view(taskId: string, inlineImages: number): Promise<TaskView> {
    return (await this.#task(taskId)).view(inlineImages);
  }

  /** Waits for a task to end, then answers it as `view` does. */
  async settled(taskId: string, inlineImages: number, signal?: AbortSignal): Promise<TaskView> {
    const task = await this.#task(taskId);
    await abortable(task.settled, signal);
    return task.view(inlineImages);
  }

  /**
   * Instruction `seq` of machine `name` (the newest when undefined) as a run tool sees it: its
   * output so far and, once it has ended, the result a direct call gives. Waits for its end until
   * `signal` aborts; held here, or read from its machine (its history, or followed while it runs).
   */
  async instruction(name: string, seq: number | undefined, inlineImages: number, signal: AbortSignal): Promise<InstructionView> {
    const target = seq ?? (await this.client.get(name)).nextSeq - 1;
    if (target < 0) throw new Error(`REPL ${name} has run nothing yet`);
    const task = await this.#task(this.#ids.forInstruction(name, target));
    await abortable(task.settled, signal).catch((error: unknown) => {
      if (!signal.aborted) throw error;
    });
    const ending = task.ending;
    if (ending && 'error' in ending) throw new Error(ending.error.message);
    return { seq: target, chunks: task.chunks, startedAt: task.createdAt, result: ending?.result(inlineImages) };
  }

  /** Interrupts a task's code (the REPL's state is kept); it then ends cancelled. */
  async cancel(taskId: string): Promise<void> {
    const task = await this.#task(taskId);
    if (task.ending) return;
    const subject = this.#ids.read(taskId);
    if (subject?.kind !== 'instruction')
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Task ${taskId} cannot be cancelled: an install runs to its end`);
    task.askCancel();
    await this.client.interrupt(subject.machine);
  }

  /** The tasks this process holds, newest first. */
  list(inlineImages: number): TaskView[] {
    return [...this.#tasks.values()].reverse().map((task) => task.view(inlineImages));
  }

  /** Calls `listener` with a task's id when its status (or, while it works, its last output line) changes. */
  onChange(listener: (taskId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops following instructions; they run on, and their tasks can be read again from their machines. */
  close(): void {
    this.#stop.abort();
    this.#listeners.clear();
  }

  async #task(taskId: string): Promise<Task> {
    const held = this.#tasks.get(taskId);
    if (held) return held;
    const subject = this.#ids.read(taskId);
    if (subject?.kind !== 'instruction')
      throw notFound(taskId, subject ? 'an install is kept only by the server that ran it, which has stopped since' : 'no task has this id');
    return this.#recover(taskId, subject.machine, subject.seq);
  }

  /** A task this process does not hold (a restart since, or another process's): from its machine's history, or followed while it runs. */
  async #recover(taskId: string, name: string, seq: number): Promise<Task> {
    let entry: HistoryEntry | undefined;
    try {
      const { nextSeq } = await this.client.get(name);
      entry = (await this.client.history(name, nextSeq > seq ? nextSeq - seq : undefined)).find((e) => e.seq === seq);
    } catch (error) {
      if (error instanceof ForeverVMError && error.code === 'MachineNotFound') throw notFound(taskId, `its REPL ${name} no longer exists`);
      // A backend without a history (hosted ForeverVM): the instruction is followed instead.
    }
    const createdAt = entry ? new Date(entry.startedAt) : new Date();
    if (!entry?.result) return this.#follow(taskId, name, seq, createdAt);
    const chunks = [...lines(entry.stdout, 'stdout', seq), ...lines(entry.stderr, 'stderr', seq)];
    const ending = this.#ending(name, seq, chunks, entry.result);
    const replay = async (output: (chunk: OutputChunk) => void) => {
      for (const chunk of chunks) output(chunk);
      return ending;
    };
    const task = this.#add(new Task(taskId, createdAt, replay, () => {}));
    await task.settled;
    return task;
  }

  #follow(id: string, name: string, seq: number, createdAt: Date): Task {
    const chunks: OutputChunk[] = [];
    const follow = (output: (chunk: OutputChunk) => void) =>
      this.client
        .follow(
          name,
          seq,
          (chunk) => {
            chunks.push(chunk);
            output(chunk);
          },
          this.#stop.signal,
        )
        .then(
          (result) => this.#ending(name, seq, chunks, result),
          (error: unknown) => {
            // Out of touch with the machine (its server stopped): the task is forgotten here, and
            // read from the machine again when next asked for.
            this.#tasks.delete(id);
            throw error;
          },
        );
    return this.#add(new Task(id, createdAt, follow, (t) => this.#changed(t)));
  }

  #ending(name: string, seq: number, chunks: OutputChunk[], result: ExecResult): Ending {
    if (stoppedWithServer(result) && 'error' in result) return { error: { code: ProtocolErrorCode.InternalError, message: result.error } };
    const interrupted = interruption(result);
    return { result: (inlineImages) => execResult(name, seq, chunks, result, inlineImages), interrupted };
  }

  #add(task: Task): Task {
    this.#tasks.set(task.id, task);
    const settled = [...this.#tasks.values()].filter((t) => t.ending);
    for (const old of settled.slice(0, Math.max(0, settled.length - SETTLED_KEPT))) this.#tasks.delete(old.id);
    return task;
  }

  #changed(task: Task): void {
    for (const listener of this.#listeners) listener(task.id);
  }
}

/** What an interrupted instruction's result says of it; undefined for one that was not interrupted. */
function interruption(result: ExecResult): string | undefined {
  if (!('error' in result)) return undefined;
  if (result.error.trimEnd().split('\n').at(-1)?.startsWith('KeyboardInterrupt')) return "the code was interrupted; the REPL's state is kept.";
  // Code that ignored the interrupt: its process was stopped, and the error says what the machine went back to.
  return result.error.startsWith('Interrupted') ? result.error : undefined;
}

function notFound(taskId: string, why: string): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, `Task not found: ${taskId} (${why})`);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

/** A history entry's text as chunks, one per line. */
function lines(text: string | undefined, stream: OutputChunk['stream'], seq: number): OutputChunk[] {
  return text ? text.split('\n').map((data) => ({ stream, data, seq })) : [];
}

function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const stop = () => reject(signal.reason as Error);
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop));
  });
}
