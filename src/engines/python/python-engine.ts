import { spawn, type ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { Readable, Writable } from 'node:stream';
import { PhaseClock } from '../../platform/phase-timings.ts';
import { isPackageName, pipArguments } from '../../shared/requests.ts';
import type { ExecResult, InputRequest, LostItem, MachineRuntime } from '../../shared/types.ts';
import type { KernelArgs, KernelOp, KernelResult } from '../kernel-commands.ts';
import {
  EngineExitedError,
  EngineStartError,
  KernelCommandError,
  NewerSnapshotError,
  CellQuestions,
  type CellListeners,
  type KernelDisplay,
  type Engine,
  type EngineExit,
  type EngineOptions,
  type OutputListener,
  type RestoreReport,
  type SnapshotReport,
} from '../engine.ts';
import { findPython } from './find-python.ts';
import type { FoundPython } from '../../platform/python-commands.ts';
import type { KernelProcesses, StartedKernel } from './kernel-processes.ts';
import { machineEnvironment, type MachineEnvironment } from './machine-environment.ts';

/** What pip says when it cannot reach its package index (after its retries). */
const OFFLINE = /NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Network is unreachable|ConnectTimeoutError/;
const START_TIMEOUT_MS = 30_000;
const STDERR_TAIL_CHARS = 2000;

interface KernelEvent {
  ev: 'ready' | 'out' | 'reply' | 'input' | 'started' | 'display';
  /** With `input`: the question's number, which its answer carries. */
  n?: number;
  prompt?: string;
  password?: boolean;
  id?: number | null;
  stream?: 'stdout' | 'stderr';
  text?: string;
  ok?: boolean;
  result?: unknown;
  error?: string;
  /** With `ready`: the interpreter's version. */
  python?: string;
  /** With `display`: what the cell displayed. */
  entry?: KernelDisplay;
}

interface PendingCall {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/**
 * The `python` engine: the user's own CPython runs the kernel as a child process. Commands (and
 * interrupts) go in on fd 3 and events come out on fd 4; the child's real stdout/stderr (subprocesses, C code) are
 * captured as output of the running cell. Not isolated: the code runs as the user.
 */
export class PythonEngine implements Engine {
  readonly name = 'python' as const;
  readonly exited: Promise<EngineExit>;
  #options: EngineOptions;
  #runtime?: MachineRuntime;
  #child?: ChildProcess;
  #commands?: Writable;
  #nextId = 1;
  #pending = new Map<number, PendingCall>();
  #onOutput?: OutputListener;
  #onDisplay?: CellListeners['onDisplay'];
  #questions?: CellQuestions;
  /**
   * A cell is running: sent, and (`started`) begun in the kernel. An interrupt before it begins
   * would find nothing to stop and be lost, so it waits for the start (`interruptWaiting`).
   */
  #cell?: { started: boolean; interruptWaiting: boolean };
  #strayOutput: Array<['stdout' | 'stderr', string]> = [];
  /** For the machine's next result: what became of its environment. */
  #notices: string[] = [];
  #stderrTail = '';
  #stopRequested = false;
  #exit?: EngineExit;
  #resolveExit!: (exit: EngineExit) => void;

  /** `kernels`: where its kernel process comes from (started for it, or ready from a pool). */
  constructor(
    options: EngineOptions,
    private readonly kernels: KernelProcesses,
  ) {
    this.#options = options;
    this.exited = new Promise((resolve) => (this.#resolveExit = resolve));
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get runtime(): MachineRuntime | undefined {
    return this.#runtime;
  }

  /**
   * The interpreter that runs the machine: its own environment's (see `machineEnvironment`), made
   * from the machine's interpreter the first time; that interpreter itself where no environment
   * can be made (then nothing can be installed into the machine).
   */
  async #interpreter(): Promise<{ python: string; base: FoundPython; environment?: MachineEnvironment }> {
    const base = await findPython(this.#options.python);
    if (!this.#options.environment) return { python: base.executable, base };
    const environment = await machineEnvironment(this.#options.environment, base);
    return { python: 'python' in environment ? environment.python : base.executable, base, environment };
  }

  /**
   * Starts the machine's kernel: a process of its interpreter ready from the pool when there is
   * one (made what the machine's environment would have started), else one started for it.
   */
  async start(): Promise<void> {
    const clock = new PhaseClock();
    const { python, base, environment } = await this.#interpreter();
    clock.lap('python: environment found');
    if (environment && 'note' in environment && environment.note) this.#notices.push(environment.note);
    const own = environment && 'python' in environment ? environment : undefined;
    // A ready process runs the base interpreter: it can become the environment's only where its site-packages are known.
    const pooled = !own || own.sitePackages ? this.kernels.take(base.executable) : undefined;
    if (pooled) {
      const enter = own && { prefix: this.#options.environment, executable: own.python, site_packages: own.sitePackages };
      try {
        await this.#begin(pooled, base.executable, enter ?? null);
        clock.lap('python: ready kernel given its machine');
        return;
      } catch {
        // Started anew below: nothing of the machine was in it yet.
        this.#drop();
      }
    }
    // It starts beside the working directory and enters it at its first command: a rollback
    // replaces that folder meanwhile (see Engine.start).
    await this.#begin({ child: this.kernels.spawn(python, dirname(this.#options.workdir)) }, python, null);
    clock.lap('python: interpreter and kernel started');
  }

  /**
   * Takes `started` as the machine's kernel process, waits for its kernel (unless it is ready
   * already) and gives it the machine: its folder, its limits, and `environment` to enter.
   */
  async #begin(started: StartedKernel, python: string, environment: Record<string, unknown> | null): Promise<void> {
    const { child } = started;
    this.#child = child;
    this.#commands = child.stdio[3] as Writable;
    // A broken pipe shows up as the exit below; the write error itself says nothing more.
    this.#commands.on('error', () => {});
    this.#readEvents(child, child.stdio[4] as Readable);
    this.#captureRaw(child, child.stdout!, 'stdout');
    this.#captureRaw(child, child.stderr!, 'stderr');
    let ready = Promise.resolve();
    if (started.python === undefined) ready = this.#ready(child, python);
    else this.#runtime = { python: started.python };
    child.once('error', (error: NodeJS.ErrnoException) => {
      if (this.#child !== child) return;
      const message =
        error.code === 'ENOENT'
          ? `Python interpreter not found: ${python} (set PERENNIAL_PYTHON or the machine's python option)`
          : `Could not start ${python}: ${error.message}`;
      this.#failAll(new EngineStartError(message));
      this.#finish({ code: null, signal: null, requested: false });
    });
    child.once('exit', (code, signal) => {
      if (this.#child !== child) return;
      const exit = { code, signal, requested: this.#stopRequested };
      const tail = this.#stderrTail.trim();
      this.#failAll(
        this.#pending.has(0)
          ? new EngineStartError(`${python} exited before the kernel started: ${tail || `code ${code}`}`)
          : new EngineExitedError(exit, tail.split('\n').at(-1)),
      );
      this.#finish(exit);
    });
    for (const stream of [child.stdout!, child.stderr!, child.stdio[4] as Readable]) stream.resume();
    await ready;
    const { workdir, folder, memoryMb, outputLimit } = this.#options;
    await this.#call('assign', { workdir: folder ?? workdir, memory_mb: memoryMb, output_limit: outputLimit, environment });
  }

  /** The kernel's first event, which says it is ready. */
  #ready(child: ChildProcess, python: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new EngineStartError(`${python} did not start the kernel within ${START_TIMEOUT_MS / 1000} s`));
        child.kill('SIGKILL');
      }, START_TIMEOUT_MS);
      this.#pending.set(0, {
        resolve: (version) => {
          clearTimeout(timer);
          this.#runtime = { python: String(version) };
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
  }

  /** Lets go of a process that could not be given the machine, and ends it. */
  #drop(): void {
    const child = this.#child;
    this.#child = undefined;
    this.#commands = undefined;
    this.#pending.clear();
    this.#stderrTail = '';
    child?.kill('SIGKILL');
  }

  async restore(snapshotPath: string): Promise<RestoreReport> {
    const clock = new PhaseClock();
    // Its kernel is today's, loaded from disk at start: what the snapshot lost comes with the next result.
    await this.#call('restore', { path: snapshotPath }).catch((error: Error) => {
      const newer = /^NewerSnapshotError: (.*)$/.exec(error.message);
      throw newer ? new NewerSnapshotError(newer[1]!) : error;
    });
    clock.lap('python: state loaded');
    return { notices: this.#notices.splice(0) };
  }

  async ready(): Promise<void> {
    // The interpreter runs from `start()`.
  }

  async run(code: string, cell: number, { onOutput, onInput, onDisplay }: CellListeners): Promise<ExecResult> {
    for (const [stream, text] of this.#strayOutput.splice(0)) onOutput(stream, text);
    this.#onOutput = onOutput;
    this.#onDisplay = onDisplay;
    this.#questions = new CellQuestions(onInput);
    this.#cell = { started: false, interruptWaiting: false };
    try {
      return (await this.#call('run', { code, cell })) as ExecResult;
    } finally {
      this.#cell = undefined;
      this.#onOutput = undefined;
      this.#onDisplay = undefined;
      this.#questions?.end();
      this.#questions = undefined;
    }
  }

  /** A command the kernel reads on a thread of its own (no signal between processes: Windows has none). */
  interrupt(): void {
    if (this.#cell && !this.#cell.started) this.#cell.interruptWaiting = true;
    else if (this.#commands && !this.#exit) this.#commands.write(JSON.stringify({ op: 'interrupt' }) + '\n');
  }

  command<Op extends KernelOp>(op: Op, args: KernelArgs<Op>): Promise<KernelResult<Op>> {
    return this.#call(op, args) as Promise<KernelResult<Op>>;
  }

  /** Runs pip in the machine's own environment: nothing of the person's changes. */
  async installPackages(packages: string[]): Promise<string> {
    const { python, base, environment } = await this.#interpreter();
    if (!environment || 'error' in environment)
      throw new KernelCommandError(
        `This machine has no environment of its own for packages${environment ? ` (${environment.error})` : ''}, and Perennial installs into no other: install into ${base.executable} yourself (${base.executable} -m pip install ${packages.join(' ')})`,
      );
    const pip = spawn(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', ...packages.flatMap(pipArguments)], {
      cwd: this.#options.folder ?? this.#options.workdir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    pip.stdout!.on('data', (d: Buffer) => (output += d));
    pip.stderr!.on('data', (d: Buffer) => (output += d));
    const code = await new Promise<number | null>((resolve) => {
      pip.once('error', () => resolve(null));
      pip.once('close', resolve);
    });
    if (/No module named pip\b/.test(output))
      throw new KernelCommandError(`pip is not available to ${base.executable}: install it (on Debian and Ubuntu: apt install python3-pip), then try again`);
    if (code !== 0 && OFFLINE.test(output))
      throw new KernelCommandError('no network to the package index: install from a wheel file or a folder of wheels (--find-links)');
    if (code !== 0) throw new KernelCommandError(`pip install failed (exit ${code}): ${output.trim().split('\n').slice(-5).join('\n')}`);
    await this.#call('refresh_imports', {});
    const installed = output
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('Successfully installed'))
      .join('\n');
    return installed || `already installed: ${packages.filter(isPackageName).join(', ') || 'everything asked for'}`;
  }

  async snapshot(path: string): Promise<SnapshotReport> {
    const clock = new PhaseClock();
    const { bytes, lost } = (await this.#call('snapshot', { path })) as { bytes: number; lost: LostItem[] };
    clock.lap('python: state pickled and written');
    return { lost, written: Promise.resolve({ bytes }) };
  }

  async stop(): Promise<void> {
    if (!this.#child || this.#exit) return;
    this.#stopRequested = true;
    this.#child.kill('SIGKILL');
    await this.exited;
  }

  #call(op: string, args: Record<string, unknown>): Promise<unknown> {
    if (this.#exit || !this.#commands) {
      return Promise.reject(new EngineExitedError(this.#exit ?? { code: null, signal: null, requested: false }));
    }
    const id = this.#nextId++;
    const reply = new Promise<unknown>((resolve, reject) => this.#pending.set(id, { resolve, reject }));
    this.#commands.write(JSON.stringify({ id, op, ...args }) + '\n');
    return reply;
  }

  /** Puts the cell's question to whoever sent the cell, and its answer (or why none) to the kernel. */
  async #answer(n: number, request: InputRequest): Promise<void> {
    const reply = await (this.#questions ?? new CellQuestions(undefined)).answer(request);
    // After the cell ended (an interrupt, a timeout) nobody waits for the answer.
    if (!reply || this.#exit || !this.#commands) return;
    this.#commands.write(JSON.stringify({ op: 'input_reply', n, ...reply }) + '\n');
  }

  #readEvents(child: ChildProcess, events: Readable): void {
    const decoder = new StringDecoder('utf8');
    let buffered = '';
    events.on('data', (data: Buffer) => {
      if (this.#child !== child) return;
      buffered += decoder.write(data);
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line) this.#onEvent(parseEvent(line));
      }
    });
  }

  #onEvent(event: KernelEvent | null): void {
    // User code can write to the channel's descriptor; what is not ours is dropped.
    if (!event) return;
    if (event.ev === 'out') {
      this.#emit(event.stream ?? 'stdout', event.text ?? '');
      return;
    }
    if (event.ev === 'display') {
      if (event.entry && typeof event.entry === 'object') this.#onDisplay?.(event.entry);
      return;
    }
    if (event.ev === 'started') {
      const cell = this.#cell;
      if (!cell) return;
      cell.started = true;
      if (cell.interruptWaiting) this.interrupt();
      return;
    }
    if (event.ev === 'input') {
      void this.#answer(event.n ?? 0, { prompt: event.prompt ?? '', password: event.password === true });
      return;
    }
    const id = event.ev === 'ready' ? 0 : (event.id ?? -1);
    const call = this.#pending.get(id);
    if (!call) return;
    this.#pending.delete(id);
    if (event.ev === 'ready') call.resolve(event.python);
    else if (event.ok) call.resolve(event.result);
    else call.reject(new KernelCommandError(event.error ?? 'the kernel rejected the command'));
  }

  #captureRaw(child: ChildProcess, stream: Readable, name: 'stdout' | 'stderr'): void {
    const decoder = new StringDecoder('utf8');
    stream.on('data', (data: Buffer) => {
      if (this.#child !== child) return;
      const text = decoder.write(data);
      if (name === 'stderr') this.#stderrTail = (this.#stderrTail + text).slice(-STDERR_TAIL_CHARS);
      if (this.#pending.has(0)) return; // start-up noise belongs to the start error, not to a cell
      this.#emit(name, text);
    });
  }

  #emit(stream: 'stdout' | 'stderr', text: string): void {
    if (!text) return;
    if (this.#onOutput) this.#onOutput(stream, text);
    // Output of threads or subprocesses between cells joins the next cell, like a terminal.
    else if (this.#strayOutput.length < 1000) this.#strayOutput.push([stream, text]);
  }

  #failAll(error: Error): void {
    const calls = [...this.#pending.values()];
    this.#pending.clear();
    for (const call of calls) call.reject(error);
  }

  #finish(exit: EngineExit): void {
    if (this.#exit) return;
    this.#exit = exit;
    this.#resolveExit(exit);
  }
}

function parseEvent(line: string): KernelEvent | null {
  try {
    const event = JSON.parse(line) as KernelEvent;
    return event && typeof event === 'object' && typeof event.ev === 'string' ? event : null;
  } catch {
    return null;
  }
}
