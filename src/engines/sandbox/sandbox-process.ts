import { spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { PhaseClock, reportLoadCpu } from '../../platform/phase-timings.ts';
import {
  EngineExitedError,
  EngineStartError,
  KernelCommandError,
  NOBODY_TO_ASK,
  type EngineExit,
  type KernelDisplay,
  type OutputListener,
  type QuestionReply,
} from '../engine.ts';
import type { InputRequest } from '../../shared/types.ts';
import { sandboxCommand, type Isolation, type SandboxLaunch } from './isolation.ts';
import { Mailbox } from './mailbox.ts';
import { fileIdentity, ImageChangedError, readAt, type ImageFile } from './machine-image-file.ts';
import type {
  BaseFile,
  ChildMessage,
  ExportedFiles,
  HostMessage,
  ImportNames,
  KernelFiles,
  LoadImage,
  MachineConfig,
  PatchPart,
  TakenImage,
} from './protocol.ts';

/** How long a sandbox process may take to start Node before it is given up. */
const SPAWN_TIMEOUT_MS = 30_000;
/** Loading Pyodide cold takes a few seconds on a busy machine; a restore less than one. */
const LOAD_TIMEOUT_MS = 120_000;
/** Letting a machine go takes milliseconds; a process that takes longer is ended instead. */
const UNLOAD_TIMEOUT_MS = 10_000;

type Lost = Array<{ name: string; reason: string }>;
/** A host message before it gets its id (distributes over the union). */
type Request = Extract<HostMessage, { id: number }> extends infer M ? (M extends unknown ? Omit<M, 'id'> : never) : never;

interface Pending {
  resolve(message: ChildMessage): void;
  reject(error: Error): void;
  /** A snapshot's: its state is taken, its image comes next. */
  paused?(message: Paused): void;
}

type Paused = Extract<ChildMessage, { type: 'paused' }>;

/** A snapshot whose state is taken: what it could not keep, the pause's phases, and the image to come. */
export interface TakenSnapshot {
  lost: Lost;
  timings: Record<string, number>;
  image: Promise<{ image: TakenImage; timings: Record<string, number> }>;
}

/** A patch's parts with the ranges of `image` they name read here. */
async function readRanges(image: ImageFile, parts: PatchPart[]): Promise<Uint8Array[]> {
  const file = await open(image.path, 'r');
  try {
    if (fileIdentity(await file.stat()) !== image.identity) throw new ImageChangedError();
    return await Promise.all(parts.map((part) => (part instanceof Uint8Array ? part : readAt(file, part.at, part.length))));
  } finally {
    await file.close();
  }
}

/**
 * One sandbox process (bubblewrap + Node permission model + Pyodide) as seen from the
 * host: typed calls over IPC, interrupts, output, and its exit. It holds one machine at a time:
 * `unload` lets it go, and the process takes the next `load`.
 */
export class SandboxProcess {
  readonly exited: Promise<EngineExit>;
  /** Receives the machine's output; set by the engine while a command runs. */
  onOutput?: OutputListener;
  /** Answers the running cell's questions; set by the engine while a cell runs. */
  onQuestion?: (request: InputRequest) => Promise<QuestionReply | undefined>;
  /** Receives what the running cell displays; set by the engine while a cell runs. */
  onDisplay?: (entry: KernelDisplay) => void;
  #child: ChildProcess;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #waiting: Promise<void>;
  #exit?: EngineExit;
  #fatal = '';
  #stopRequested = false;
  #stderr = '';
  readonly #mailbox: Mailbox;
  #notices: string[] = [];
  #prefetched = false;
  /** Machines loaded so far. */
  #served = 0;
  /** Whose machines it may hold (`SandboxPool`): set as it is given a machine. */
  tenant?: string;

  /**
   * `mailboxes`: the folder where the process's mailbox is made (and removed when it ends);
   * `pooled`: it is launched as any machine may run (no network, no folder), and may hold one after another.
   */
  constructor(
    launch: Omit<SandboxLaunch, 'mailboxDir'>,
    isolation: Isolation,
    mailboxes: string,
    readonly pooled: boolean,
  ) {
    this.#mailbox = new Mailbox(mailboxes);
    const { command, args, env } = sandboxCommand({ ...launch, mailboxDir: this.#mailbox.dir }, isolation);
    this.#child = spawn(command, args, {
      env,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    this.#child.stderr!.on('data', (data: Buffer) => (this.#stderr = (this.#stderr + data.toString()).slice(-4000)));
    this.#waiting = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new EngineStartError('the sandbox process did not start in time')), SPAWN_TIMEOUT_MS);
      this.#child.once('message', (message: ChildMessage) => {
        clearTimeout(timer);
        if (message.type === 'waiting') resolve();
        else reject(new EngineStartError(`unexpected first message from the sandbox: ${message.type}`));
      });
      this.#child.once('error', (error) => {
        clearTimeout(timer);
        // Never started: no exit follows.
        if (this.#child.pid === undefined) this.#mailbox.close();
        reject(new EngineStartError(`could not start the sandbox process: ${error.message}`));
      });
      this.#child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new EngineStartError(`the sandbox process exited at start (code ${code}): ${this.#stderr.trim().split('\n').at(-1) ?? ''}`));
      });
    });
    this.#waiting.catch(() => {});
    this.#child.on('message', (message: ChildMessage) => this.#onMessage(message));
    this.exited = new Promise((resolve) => {
      this.#child.once('exit', (code, signal) => {
        this.#mailbox.close();
        // After a fatal error the host ended the process; what counts is how the machine ended.
        const status = /exit\((\d+)\)/.exec(this.#fatal)?.[1];
        this.#exit = this.#fatal ? { code: status ? Number(status) : 1, signal: null, requested: false } : { code, signal, requested: this.#stopRequested };
        const detail = this.#fatal || this.#stderr.trim().split('\n').at(-1) || '';
        for (const call of this.#pending.values()) call.reject(new EngineExitedError(this.#exit, detail));
        this.#pending.clear();
        resolve(this.#exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get alive(): boolean {
    return !this.#exit;
  }

  /** What the machine's next result should say about its load. */
  get notices(): string[] {
    return this.#notices;
  }

  /** How many machines it has loaded. */
  get served(): number {
    return this.#served;
  }

  /** Nothing asked of it is under way (a cell, a snapshot): its machine may be let go. */
  get idle(): boolean {
    return this.#pending.size === 0;
  }

  /**
   * Boots the process's one machine: fresh with `kernel`, or from an image, whose kernel is
   * upgraded to `kernel` when that is given too. With `importNames`, the kernel is configured as
   * part of the load: `config`'s limits, and the names it may auto-install. `imageFile`: the
   * image file whose ranges the image's patch names, lent to the sandbox for the load.
   */
  async load(
    config: MachineConfig,
    source: ({ image: LoadImage; kernel?: KernelFiles } | { kernel: KernelFiles }) & { importNames?: ImportNames },
    imageFile?: ImageFile,
  ): Promise<void> {
    await this.#waiting;
    this.#served++;
    const clock = new PhaseClock();
    const image = 'image' in source && 'patch' in source.image ? source.image : undefined;
    try {
      if (image?.patch.some((part) => !(part instanceof Uint8Array))) {
        if (!imageFile) throw new Error("a patch that names ranges of its image file needs the file's path");
        const lent = this.#mailbox.lend(imageFile.path);
        if (lent && fileIdentity(statSync(lent)) !== imageFile.identity) throw new ImageChangedError();
        // No file lent: its ranges cross as bytes.
        if (!lent) image.patch = await readRanges(imageFile, image.patch);
        clock.lap('host: image lent');
      }
      const reply = await this.#request({ type: 'load', config, ...source }, LOAD_TIMEOUT_MS);
      if (reply.type !== 'loaded') throw new EngineStartError(`the sandbox answered ${reply.type} to load`);
      clock.lap('sandbox: messages crossing', reply.timings);
      reportLoadCpu({ reused: this.#served > 1, ...reply.cpu });
      this.#notices = Array.isArray(reply.notices) ? reply.notices.map(String) : [];
    } finally {
      this.#mailbox.unlend();
    }
  }

  /**
   * Lets the machine go: the process undoes what it changed there and boots the next machine's
   * instance ahead (on the base it had, which counts as prefetched). Rejects when the sandbox
   * refuses (it was busy, or the machine left work under way): the caller ends the process then.
   */
  async unload(): Promise<void> {
    this.#result(await this.#request({ type: 'unload' }, UNLOAD_TIMEOUT_MS));
    this.#notices = [];
    this.#prefetched = true;
  }

  async call(op: string, args: Record<string, unknown>): Promise<unknown> {
    const reply = await this.#request({ type: 'call', op, args });
    return this.#result(reply);
  }

  /**
   * Takes the machine's state. Answers once it is taken (the machine's pause is over, and calls
   * run again), with `image`, which settles once the sandbox has made it.
   */
  async snapshot(): Promise<TakenSnapshot> {
    let pause!: (message: Paused) => void;
    const paused = new Promise<Paused>((resolve) => (pause = resolve));
    const image = this.#request({ type: 'snapshot' }, undefined, pause).then((reply) => {
      if (reply.type === 'reply' && !reply.ok) throw new KernelCommandError(`the machine cannot be swapped out: ${reply.error}`);
      if (reply.type !== 'image') throw new KernelCommandError(`the sandbox answered ${reply.type} to snapshot`);
      return { image: reply.image, timings: reply.timings };
    });
    image.catch(() => {});
    // The sandbox says `paused` before it answers with the image, unless it fails first.
    const { lost, timings } = await Promise.race([
      paused,
      image.then(() => Promise.reject(new KernelCommandError('the sandbox sent its image before its pause'))),
    ]);
    return { lost, timings, image };
  }

  /** The machine's own files and loaded packages, for an upgrade to carry to another build. */
  async exportFiles(): Promise<ExportedFiles> {
    return this.#result(await this.#request({ type: 'exportFiles' }, LOAD_TIMEOUT_MS)) as ExportedFiles;
  }

  async importFiles(archive: Uint8Array): Promise<void> {
    this.#result(await this.#request({ type: 'importFiles', archive }, LOAD_TIMEOUT_MS));
  }

  async loadPackages(paths: string[]): Promise<void> {
    this.#result(await this.#request({ type: 'loadPackages', paths }, LOAD_TIMEOUT_MS));
  }

  /** Whether the process has done what `prefetch` asked: a load from that base now starts at once. */
  get prefetched(): boolean {
    return this.#prefetched;
  }

  /** Has a waiting sandbox read the base memory that the machine it will load is a patch on, and warm up on it. */
  async prefetch(base: BaseFile): Promise<void> {
    await this.#waiting;
    if (this.alive && this.#child.connected) this.#child.send({ type: 'prefetch', base } satisfies HostMessage);
  }

  interrupt(): void {
    if (this.alive) this.#mailbox.interrupt();
  }

  async kill(): Promise<EngineExit> {
    if (this.alive) {
      this.#stopRequested = true;
      // A kill that lands while bubblewrap is still setting up leaves its inner process behind
      // (it has not tied itself to its parent yet), holding our pipes: let the start finish first.
      await this.#waiting.catch(() => {});
      this.#child.kill('SIGKILL');
    }
    return this.exited;
  }

  async #answer({ n, prompt, password }: Extract<ChildMessage, { type: 'input' }>): Promise<void> {
    const request = { prompt, password: password === true };
    const reply = this.onQuestion ? await this.onQuestion(request) : { error: NOBODY_TO_ASK };
    if (reply && this.alive) this.#mailbox.answer(JSON.stringify({ n, ...reply }));
  }

  #result(reply: ChildMessage): unknown {
    if (reply.type !== 'reply') throw new KernelCommandError(`unexpected answer from the sandbox: ${reply.type}`);
    if (!reply.ok) throw new KernelCommandError(reply.error);
    return reply.result;
  }

  #request(message: Request, timeoutMs?: number, paused?: (message: Paused) => void): Promise<ChildMessage> {
    if (!this.alive) return Promise.reject(new EngineExitedError(this.#exit!, this.#fatal));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      const timer = timeoutMs
        ? setTimeout(() => {
            this.#pending.delete(id);
            reject(new EngineStartError(`the sandbox did not answer ${message.type} within ${timeoutMs / 1000} s`));
            void this.kill();
          }, timeoutMs)
        : undefined;
      this.#pending.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          resolve(reply);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
        ...(paused ? { paused } : {}),
      });
      this.#child.send({ ...message, id } as HostMessage);
    });
  }

  /** Messages come from a process running untrusted code: anything unexpected is ignored. */
  #onMessage(message: ChildMessage): void {
    if (!message || typeof message !== 'object') return;
    switch (message.type) {
      case 'out':
        if (typeof message.text === 'string' && (message.stream === 'stdout' || message.stream === 'stderr')) this.onOutput?.(message.stream, message.text);
        return;
      case 'display':
        if (message.entry && typeof message.entry === 'object') this.onDisplay?.(message.entry);
        return;
      case 'input':
        if (typeof message.n === 'number' && typeof message.prompt === 'string') void this.#answer(message);
        return;
      case 'prefetched':
        this.#prefetched = true;
        return;
      case 'fatal':
        // The machine is gone; ending the process makes it a crash, restored from its snapshot.
        this.#fatal = String(message.error).split('\n')[0]!.slice(0, 500);
        this.#child.kill('SIGKILL');
        return;
      case 'paused':
        this.#pending.get(message.id)?.paused?.(message);
        return;
      case 'loaded':
      case 'reply':
      case 'image': {
        const call = this.#pending.get(message.id);
        if (!call) return;
        this.#pending.delete(message.id);
        call.resolve(message);
        return;
      }
    }
  }
}
