/**
 * The sandbox process's line to the host, made to work while Python holds the thread. Pyodide runs
 * on the process's one thread (a second V8 isolate would cost ~11 MB per machine), so while a cell
 * computes, no IPC message is read and no timer fires. Pyodide still calls back at its periodic
 * signal check (what it calls the interrupt buffer), and that is where this looks for interrupts
 * (they come on a pipe of their own, fd 4, which can be read without the event loop) and sends
 * what the cell has printed so far. For the same reason, the answer to a cell's question comes on
 * a pipe too (fd 5), which the cell waits on with the thread held.
 */
import { readSync } from 'node:fs';
import { Socket } from 'node:net';
import { TextDecoder } from 'node:util';
import type { ChildMessage } from '../protocol.ts';

/** The pipe the host writes a byte to for each interrupt (`SandboxProcess` opens it). */
const INTERRUPT_FD = 4;
/** The pipe the host writes answers to the cell's questions on, a JSON line each (`SandboxProcess` opens it). */
const ANSWER_FD = 5;
/** A running cell looks at the pipe at most this often: the longest an interrupt waits. */
const POLL_MS = 5;
/** How long a cell waiting for an answer sleeps between looks at the pipes. */
const ANSWER_POLL_MS = 20;
/** How long output is gathered after a first write, so that a burst of prints crosses in one message. */
const OUTPUT_GATHER_MS = 10;
const SIGINT = 2;

type Stream = 'stdout' | 'stderr';

/** What Pyodide reads and clears at each signal check: element 0 is the pending signal. */
export interface SignalBuffer {
  0: number;
}

export class HostChannel {
  /** Give this to `setInterruptBuffer`: reading it is the periodic check. */
  readonly signals: SignalBuffer;
  #signal = 0;
  #polledAt = 0;
  readonly #pipe = Buffer.alloc(64);
  readonly #decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  #output: Array<{ stream: Stream; text: string }> = [];
  #outputSince = 0;
  #outputTimer?: NodeJS.Timeout;
  #answers = '';
  readonly #answerBytes = Buffer.alloc(65536);
  readonly #answerDecoder = new TextDecoder();
  readonly #sleeper = new Int32Array(new SharedArrayBuffer(4));

  constructor() {
    const check = () => this.#check();
    const set = (value: number) => (this.#signal = value);
    this.signals = Object.defineProperty({} as SignalBuffer, 0, { get: check, set });
    // While the thread is free, interrupts are read as they come; the checks read the rest.
    const interrupts = new Socket({ fd: INTERRUPT_FD, readable: true, writable: false });
    interrupts.on('data', () => (this.#signal = SIGINT));
    interrupts.on('error', () => {});
    interrupts.unref();
    // The same for answers, which only a waiting cell reads (`awaitAnswer`): those that arrive while
    // the thread is free answer questions an interrupt cut short.
    const answers = new Socket({ fd: ANSWER_FD, readable: true, writable: false });
    answers.on('data', () => {});
    answers.on('error', () => {});
    answers.unref();
  }

  /** Sends `message` after everything printed before it. */
  send(message: ChildMessage): void {
    this.#flush();
    this.#sendNow(message);
  }

  /** What the machine prints: gathered, and sent within `OUTPUT_GATHER_MS` even while Python runs. */
  write(stream: Stream, bytes: Uint8Array): void {
    const text = this.#decoders[stream].decode(bytes, { stream: true });
    const last = this.#output.at(-1);
    if (last?.stream === stream) last.text += text;
    else this.#output.push({ stream, text });
    const now = performance.now();
    if (this.#output.length === 1 && last === undefined) {
      this.#outputSince = now;
      this.#outputTimer = setTimeout(() => this.#flush(), OUTPUT_GATHER_MS);
    } else if (now - this.#outputSince >= OUTPUT_GATHER_MS) this.#flush();
  }

  /**
   * Waits, with the thread held, for the answer to question `n`: the host's JSON line, or
   * undefined when an interrupt came first (it stays pending, for Python to raise). Answers to
   * earlier questions, which an interrupt cut short, are dropped.
   */
  awaitAnswer(n: number): string | undefined {
    for (;;) {
      this.#readPipe();
      if (this.#signal) return undefined;
      let newline: number;
      while ((newline = this.#answers.indexOf('\n')) >= 0) {
        const line = this.#answers.slice(0, newline);
        this.#answers = this.#answers.slice(newline + 1);
        if ((JSON.parse(line) as { n?: unknown }).n === n) return line;
      }
      const read = this.#readAnswers();
      if (read === 0) return JSON.stringify({ n, error: 'Perennial closed the machine' });
      if (read < 0) Atomics.wait(this.#sleeper, 0, 0, ANSWER_POLL_MS);
    }
  }

  /** Bytes read from the answer pipe: 0 when the host closed it, -1 when none are there yet. */
  #readAnswers(): number {
    try {
      const read = readSync(ANSWER_FD, this.#answerBytes, 0, this.#answerBytes.length, null);
      this.#answers += this.#answerDecoder.decode(this.#answerBytes.subarray(0, read), { stream: true });
      return read;
    } catch {
      return -1; // EAGAIN
    }
  }

  /** After a command: an interrupt that arrived as it ended must not hit the next one. */
  clearInterrupt(): void {
    this.#readPipe();
    this.#signal = 0;
  }

  #check(): number {
    const now = performance.now();
    if (now - this.#polledAt >= POLL_MS) {
      this.#polledAt = now;
      this.#readPipe();
      if (this.#output.length && now - this.#outputSince >= OUTPUT_GATHER_MS) this.#flush();
    }
    return this.#signal;
  }

  #readPipe(): void {
    try {
      while (readSync(INTERRUPT_FD, this.#pipe, 0, this.#pipe.length, null) > 0) this.#signal = SIGINT;
    } catch {
      // EAGAIN: nothing written since the last look.
    }
  }

  #flush(): void {
    clearTimeout(this.#outputTimer);
    const output = this.#output;
    this.#output = [];
    for (const { stream, text } of output) if (text) this.#sendNow({ type: 'out', stream, text });
  }

  #sendNow(message: ChildMessage): void {
    // Gone when the host is: the process ends on its `disconnect`.
    if (process.connected) process.send!(message);
  }
}
