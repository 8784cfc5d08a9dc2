import type { OutputChunk, StreamName } from '../shared/types.ts';

/** How long a partial line may wait for the rest of its line before it is sent on its own. */
export const PARTIAL_LINE_DELAY_MS = 50;

/**
 * Turns the text an instruction writes into ForeverVM chunks: one per line, without the newline,
 * numbered from 0. A partial line is sent after a short pause, or as soon as the other stream
 * writes, so that stdout and stderr stay in the order they were written.
 */
export class OutputLines {
  #seq = 0;
  #partial: { stream: StreamName; text: string } | null = null;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly emit: (chunk: OutputChunk) => void,
    private readonly partialDelayMs = PARTIAL_LINE_DELAY_MS,
  ) {}

  push(stream: StreamName, text: string): void {
    if (!text) return;
    if (this.#partial && this.#partial.stream !== stream) this.#flushPartial();
    const lines = ((this.#partial?.text ?? '') + text).split('\n');
    const rest = lines.pop()!;
    for (const line of lines) this.emit({ stream, data: line, seq: this.#seq++ });
    this.#partial = rest ? { stream, text: rest } : null;
    if (!this.#partial) this.#clearTimer();
    else this.#timer ??= setTimeout(() => this.#flushPartial(), this.partialDelayMs);
  }

  /** Sends whatever is left; call when the instruction ends. */
  end(): void {
    this.#flushPartial();
  }

  #flushPartial(): void {
    this.#clearTimer();
    const partial = this.#partial;
    this.#partial = null;
    if (partial) this.emit({ stream: partial.stream, data: partial.text, seq: this.#seq++ });
  }

  #clearTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
