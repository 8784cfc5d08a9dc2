/**
 * What the host tells a sandbox while Python holds its one thread: interrupts, and the answers to
 * a cell's questions. No IPC message is read then, so the sandbox looks for them at Pyodide's
 * periodic signal check. They used to come on pipes, read there without waiting, which works
 * where a read of an empty pipe fails with EAGAIN, and hangs on Windows, where it blocks. A read
 * of a file never waits, on any system: the host appends to two files of a folder the sandbox may
 * read, one byte per interrupt and a JSON line per answer, and the sandbox reads on from where it
 * was (`HostChannel`).
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The files of a mailbox folder. */
export const MAILBOX_FILES = { interrupts: 'interrupts', answers: 'answers' } as const;

const INTERRUPT = Uint8Array.of(2);

/** The host's end: one sandbox process's mailbox folder, removed with `close`. */
export class Mailbox {
  readonly dir: string;
  readonly #interrupts: number;
  readonly #answers: number;
  #closed = false;

  /** A new mailbox folder in `parent`, with both files there (empty) before the sandbox starts. */
  constructor(parent: string) {
    mkdirSync(parent, { recursive: true, mode: 0o700 });
    this.dir = mkdtempSync(join(parent, 'sandbox-'));
    this.#interrupts = openSync(join(this.dir, MAILBOX_FILES.interrupts), 'a', 0o600);
    this.#answers = openSync(join(this.dir, MAILBOX_FILES.answers), 'a', 0o600);
  }

  interrupt(): void {
    if (!this.#closed) writeSync(this.#interrupts, INTERRUPT);
  }

  /** `line`, one JSON object without a newline. */
  answer(line: string): void {
    if (!this.#closed) writeSync(this.#answers, `${line}\n`);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#interrupts);
    closeSync(this.#answers);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
