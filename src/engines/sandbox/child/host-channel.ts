/**
 * The sandbox process's line to the host, made to work while Python holds the thread. Pyodide runs
 * on the process's one thread (a worker thread would cost 9–17 MiB per machine), so while a cell
 * computes, no IPC message is read and no timer fires. Pyodide still calls back at its periodic
 * signal check (what it calls the interrupt buffer), and that is where this looks in the mailbox
 * for interrupts (see mailbox.ts) and sends what the cell has printed so far. For the same reason,
 * the answer to a cell's question comes to the mailbox too, where the cell waits with the thread held.
 */
import { fstatSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { TextDecoder } from 'node:util';
import { MAILBOX_FILES } from '../mailbox.ts';
import type { ChildMessage } from '../protocol.ts';
import { hostAlive } from './harden.ts';

/** A running cell looks at the mailbox at most this often: the longest an interrupt waits. */
const POLL_MS = 5;
/** How long a cell waiting for an answer sleeps between looks at the mailbox. */
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
  readonly #interrupts: number;
  /** Interrupts seen so far: the interrupt file's length when last looked at. */
  #interruptsSeen = 0;
  /**
   * A cell sent and not yet begun: the host interrupts a run once it has sent it, and Python
   * drops an interrupt while no cell runs, so one that comes now waits for the cell to begin.
   */
  #cellComing = false;
  readonly #answerFile: number;
  #answersRead = 0;
  #decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  #output: Array<{ stream: Stream; text: string }> = [];
  #outputSince = 0;
  #outputTimer?: NodeJS.Timeout;
  #answers = '';
  readonly #answerBytes = Buffer.alloc(65536);
  readonly #answerDecoder = new TextDecoder();
  readonly #sleeper = new Int32Array(new SharedArrayBuffer(4));

  /** `mailbox`: the folder the host writes interrupts and answers to. */
  constructor(mailbox: string) {
    const check = () => this.#check();
    const set = (value: number) => (this.#signal = value);
    this.signals = Object.defineProperty({} as SignalBuffer, 0, { get: check, set });
    this.#interrupts = openSync(join(mailbox, MAILBOX_FILES.interrupts), 'r');
    this.#answerFile = openSync(join(mailbox, MAILBOX_FILES.answers), 'r');
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
      this.#readInterrupts();
      if (this.#signal) return undefined;
      let newline: number;
      while ((newline = this.#answers.indexOf('\n')) >= 0) {
        const line = this.#answers.slice(0, newline);
        this.#answers = this.#answers.slice(newline + 1);
        if ((JSON.parse(line) as { n?: unknown }).n === n) return line;
      }
      if (this.#readAnswers() > 0) continue;
      // The process would otherwise wait for good: it ends with the host only through its event loop.
      if (!hostAlive()) return JSON.stringify({ n, error: 'Perennial closed the machine' });
      Atomics.wait(this.#sleeper, 0, 0, ANSWER_POLL_MS);
    }
  }

  /** Bytes read from the answer file since the last look. */
  #readAnswers(): number {
    const read = readSync(this.#answerFile, this.#answerBytes, 0, this.#answerBytes.length, this.#answersRead);
    this.#answersRead += read;
    this.#answers += this.#answerDecoder.decode(this.#answerBytes.subarray(0, read), { stream: true });
    return read;
  }

  /**
   * The machine is let go: what it printed goes out, a character it left half written is dropped,
   * and an interrupt or an answer meant for it does not reach the next.
   */
  nextMachine(): void {
    this.#flush();
    this.#decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    this.#answers = '';
    this.#answersRead = fstatSync(this.#answerFile).size;
    this.clearInterrupt();
  }

  /** Before a run command: an interrupt from now on is the cell's, held until it begins. */
  cellComing(): void {
    this.#cellComing = true;
  }

  /** The cell began (the kernel says so on its device): an interrupt reaches it from now on. */
  cellStarted(): void {
    this.#cellComing = false;
  }

  /** After a command: an interrupt that arrived as it ended must not hit the next one. */
  clearInterrupt(): void {
    this.#cellComing = false;
    this.#readInterrupts();
    this.#signal = 0;
  }

  #check(): number {
    const now = performance.now();
    if (now - this.#polledAt >= POLL_MS) {
      this.#polledAt = now;
      this.#readInterrupts();
      if (this.#output.length && now - this.#outputSince >= OUTPUT_GATHER_MS) this.#flush();
    }
    return this.#signal;
  }

  #readInterrupts(): void {
    if (this.#cellComing) return;
    const written = fstatSync(this.#interrupts).size;
    if (written > this.#interruptsSeen) {
      this.#interruptsSeen = written;
      this.#signal = SIGINT;
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
