import { tracebackException, viewResult } from '../shared/result-format.ts';
import { figureImages, type DisplayBundle, type Displayed, type ExecResult, type OutputChunk, type StreamName } from '../shared/types.ts';
import type { Content } from './messages.ts';

/** Sends one iopub message in answer to the cell's request (a comm's with its metadata and binary buffers). */
export type Publish = (msgType: string, content: Content, extra?: { metadata?: Content; buffers?: Buffer[] }) => void;

/** What a cell's `execute_reply` and its `error` message say of an exception. */
export interface CellError {
  ename: string;
  evalue: string;
  traceback: string[];
}

/**
 * A cell's output as Jupyter's iopub messages, in the order it came: its lines as `stream`
 * (lines that come together go in one message), what it displays as `display_data`,
 * `update_display_data` and `clear_output`, then, when it ends, its figures, its value as
 * `execute_result` or its exception as `error`, and what Perennial has to say, on stderr.
 */
export class CellMessages {
  #stream: { name: StreamName; text: string } | null = null;
  #flush: NodeJS.Immediate | undefined;
  #value: Pick<DisplayBundle, 'data' | 'metadata'> | undefined;
  /** What IPython's pager showed (`obj?`): the `page` payloads of the cell's `execute_reply`. */
  readonly pages: Content[] = [];

  constructor(private readonly publish: Publish) {}

  output(chunk: OutputChunk): void {
    this.text(chunk.stream, `${chunk.data}\n`);
  }

  display(entry: Displayed): void {
    this.#sendStream();
    if ('comm' in entry) {
      const { msg_type, content, metadata, buffers } = entry.comm;
      return this.publish(msg_type, content, { metadata, buffers: buffers.map((b) => Buffer.from(b, 'base64')) });
    }
    if (!('data' in entry)) return this.publish('clear_output', { wait: entry.wait });
    if (entry.result) {
      this.#value = entry;
      return;
    }
    if (entry.page) {
      this.pages.push({ source: 'page', data: entry.data, start: 0 });
      return;
    }
    this.publish(entry.update ? 'update_display_data' : 'display_data', { data: entry.data, metadata: entry.metadata, transient: entry.transient ?? {} });
  }

  /** Text printed outside a cell's lines (by a comm's handler), as it came. */
  text(stream: StreamName, text: string): void {
    if (this.#stream && this.#stream.name !== stream) this.#sendStream();
    this.#stream ??= { name: stream, text: '' };
    this.#stream.text += text;
    this.#flush ??= setImmediate(() => this.#sendStream());
  }

  /** Sends what waits: call when no more comes. */
  flush(): void {
    this.#sendStream();
  }

  /** Perennial's own lines (a machine that came back, a restart), on stderr before or after the cell's. */
  notes(lines: string[]): void {
    for (const line of lines) this.output({ stream: 'stderr', data: `[perennial] ${line}`, seq: 0 });
  }

  /** The cell ended: what is left to send, and its exception, if it raised one. */
  end(result: ExecResult, executionCount: number): CellError | null {
    this.#sendStream();
    const view = viewResult(result);
    for (const image of figureImages(result))
      this.publish('display_data', { data: { [image.mimeType]: image.data, 'text/plain': '<Figure>' }, metadata: {}, transient: {} });
    const value = this.#value ?? result.data?.display?.find((entry): entry is DisplayBundle => 'data' in entry && entry.result === true);
    let error: CellError | null = null;
    if (view.error !== null) {
      const exception = tracebackException(view.error);
      // IPython's, where the machine has it: what ipykernel sends.
      const traceback = result.data?.traceback ?? view.error.trimEnd().split('\n');
      error = { ename: exception.name, evalue: exception.message, traceback };
      this.publish('error', { ...error });
    } else if (value) this.publish('execute_result', { execution_count: executionCount, data: value.data, metadata: value.metadata });
    else if (view.value !== null) this.publish('execute_result', { execution_count: executionCount, data: { 'text/plain': view.value }, metadata: {} });
    this.notes(view.notes.map((note) => note.text));
    this.#sendStream();
    return error;
  }

  #sendStream(): void {
    clearImmediate(this.#flush);
    this.#flush = undefined;
    if (!this.#stream) return;
    this.publish('stream', { name: this.#stream.name, text: this.#stream.text });
    this.#stream = null;
  }
}
