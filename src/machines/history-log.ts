import { closeSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { ExecResult, HistoryEntry } from '../shared/types.ts';

/** Text kept per stream in the history; the live stream is capped separately. */
const HISTORY_OUTPUT_CHARS = 8192;

/**
 * The history's format, named by the first line of files written since 0.2.0 (those of 0.1.0 have
 * none, and are the same format). Readers skip lines without a seq, so older builds skip it too.
 */
const HISTORY_FORMAT = 1;

type HistoryLine =
  | { t: 'format'; version: number }
  | { t: 'start'; seq: number; code: string; at: string }
  | { t: 'end'; seq: number; result: ExecResult; stdout?: string; stderr?: string };

/**
 * A machine's append-only instruction history (JSON lines). Lines are written with a plain
 * write(2) as each instruction starts and ends, so they survive a kill -9 of the server; a torn
 * last line is skipped when read. A write that fails (a full disk) throws, and leaves no part of
 * its line for the next one to be glued to.
 */
export class HistoryLog {
  #fd: number | undefined;
  #size = 0;

  constructor(readonly path: string) {}

  started(seq: number, code: string, at: Date): void {
    this.#append({ t: 'start', seq, code, at: at.toISOString() });
  }

  finished(seq: number, result: ExecResult, stdout: string, stderr: string): void {
    this.#append({
      t: 'end',
      seq,
      result,
      ...(stdout ? { stdout: stdout.slice(0, HISTORY_OUTPUT_CHARS) } : {}),
      ...(stderr ? { stderr: stderr.slice(0, HISTORY_OUTPUT_CHARS) } : {}),
    });
  }

  /** Entries in seq order; `last` keeps only the newest ones. */
  async read(last?: number): Promise<HistoryEntry[]> {
    const text = await readFile(this.path, 'utf8').catch(() => '');
    const entries = new Map<number, HistoryEntry>();
    for (const raw of text.split('\n')) {
      const line = parseLine(raw);
      if (!line) continue;
      if (line.t === 'start') entries.set(line.seq, { seq: line.seq, code: line.code, startedAt: line.at });
      else {
        const entry = entries.get(line.seq);
        if (entry) Object.assign(entry, { result: line.result, stdout: line.stdout, stderr: line.stderr });
      }
    }
    const all = [...entries.values()].sort((a, b) => a.seq - b.seq);
    return last === undefined ? all : all.slice(Math.max(0, all.length - last));
  }

  /** The highest seq recorded, read from the end of the file only. */
  lastSeq(): number {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return -1;
    }
    try {
      const { size } = fstatSync(fd);
      for (let span = 64 * 1024; ; span *= 4) {
        const start = Math.max(0, size - span);
        const buffer = Buffer.alloc(size - start);
        readSync(fd, buffer, 0, buffer.length, start);
        const lines = buffer.toString('utf8').split('\n');
        if (start > 0) lines.shift(); // probably cut in the middle
        const seqs = lines
          .map(parseLine)
          .filter((l) => l !== null)
          .map((l) => l.seq);
        if (seqs.length || start === 0) return seqs.length ? Math.max(...seqs) : -1;
      }
    } finally {
      closeSync(fd);
    }
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  /** Opens the file to append; a new one starts with its format, one of a newer format is not written to. */
  #open(): number {
    const fd = openSync(this.path, 'a+', 0o600);
    try {
      const size = fstatSync(fd).size;
      if (size === 0) writeSync(fd, JSON.stringify({ t: 'format', version: HISTORY_FORMAT } satisfies HistoryLine) + '\n');
      else {
        const start = Buffer.alloc(Math.min(size, 256));
        readSync(fd, start, 0, start.length, 0);
        const header = parseHeader(start.toString('utf8').split('\n')[0]!);
        if (header?.t === 'format' && header.version > HISTORY_FORMAT) {
          throw new Error(`it was written by a newer Perennial in format ${header.version} (this one writes format ${HISTORY_FORMAT}), and is left as it is`);
        }
      }
      this.#size = fstatSync(fd).size;
    } catch (error) {
      closeSync(fd);
      throw error;
    }
    this.#fd = fd;
    return fd;
  }

  #append(line: HistoryLine): void {
    const bytes = Buffer.from(JSON.stringify(line) + '\n');
    try {
      const fd = this.#fd ?? this.#open();
      // A short write is followed by another, which says why it fell short.
      for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written);
      this.#size += bytes.length;
    } catch (error) {
      try {
        if (this.#fd !== undefined) ftruncateSync(this.#fd, this.#size);
      } catch {
        // The write's own error says what went wrong.
      }
      throw new Error(`the machine's history could not be written (${(error as Error).message})`, { cause: error });
    }
  }
}

function parseHeader(raw: string): HistoryLine | undefined {
  try {
    return JSON.parse(raw) as HistoryLine;
  } catch {
    return undefined;
  }
}

function parseLine(raw: string): Exclude<HistoryLine, { t: 'format' }> | null {
  if (!raw) return null;
  try {
    const line = JSON.parse(raw) as { seq?: unknown };
    return typeof line.seq === 'number' ? (line as Exclude<HistoryLine, { t: 'format' }>) : null;
  } catch {
    return null;
  }
}
