/**
 * What the host tells a sandbox while Python holds its one thread: interrupts, and the answers to
 * a cell's questions. No IPC message is read then, so the sandbox looks for them at Pyodide's
 * periodic signal check. They used to come on pipes, read there without waiting, which works
 * where a read of an empty pipe fails with EAGAIN, and hangs on Windows, where it blocks. A read
 * of a file never waits, on any system: the host appends to two files of a folder the sandbox may
 * read, one byte per interrupt and a JSON line per answer, and the sandbox reads on from where it
 * was (`HostChannel`).
 */
import { closeSync, linkSync, mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The files of a mailbox folder; `image`, the image file a load's patch is partly read from. */
export const MAILBOX_FILES = { interrupts: 'interrupts', answers: 'answers', image: 'image' } as const;

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

  /**
   * Lets the sandbox read the file at `path` as its `image`, for a load: a hard link, which costs
   * neither a copy nor room, and leaves the machine's own file where the sandbox cannot see it.
   * Answers the link's path; none where one cannot be made (another file system, one without
   * links): the host reads the file then.
   */
  lend(path: string): string | undefined {
    this.#unlend();
    const link = join(this.dir, MAILBOX_FILES.image);
    try {
      linkSync(path, link);
      return link;
    } catch {
      return undefined;
    }
  }

  /** Takes back a lent file: the load is over. */
  unlend(): void {
    if (!this.#closed) this.#unlend();
  }

  #unlend(): void {
    rmSync(join(this.dir, MAILBOX_FILES.image), { force: true });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#interrupts);
    closeSync(this.#answers);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
