import type { KernelDisplay } from '../engines/engine.ts';
import type { DisplayEntry, OutputChunk, ResultData, StreamName } from '../shared/types.ts';

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
  /** The stream whose last chunk was a partial line, sent before its newline came. */
  #cut: StreamName | null = null;
  #timer: NodeJS.Timeout | undefined;
  /** Where each chunk sent starts in the text written, in code points (the kernel counts so). */
  #starts: number[] = [];
  #offset = 0;

  constructor(
    private readonly emit: (chunk: OutputChunk) => void,
    private readonly partialDelayMs = PARTIAL_LINE_DELAY_MS,
  ) {}

  push(stream: StreamName, text: string): void {
    if (!text) return;
    if (this.#partial && this.#partial.stream !== stream) this.#flushPartial();
    const lines = ((this.#partial?.text ?? '') + text).split('\n');
    const rest = lines.pop()!;
    if (this.#cut === stream && lines[0] === '') {
      // The newline that ends the partial line already sent: that line is whole now, not followed by an empty one.
      lines.shift();
      this.#offset += 1;
    }
    this.#cut = null;
    for (const line of lines) this.#send(stream, line, 1);
    this.#partial = rest ? { stream, text: rest } : null;
    if (!this.#partial) this.#clearTimer();
    else this.#timer ??= setTimeout(() => this.#flushPartial(), this.partialDelayMs);
  }

  /** Sends whatever is left; call when the instruction ends. */
  end(): void {
    this.#flushPartial();
  }

  /**
   * The kernel places what a cell displayed by how many characters of output came before it
   * (`output_chars`); a surface needs how many chunks did (`afterOutput`). Call after `end`.
   */
  placeDisplays(data: ResultData | null | undefined): void {
    if (!data?.display) return;
    data.display = data.display.map((entry) => this.#place(entry as unknown as KernelDisplay));
  }

  /**
   * What a running cell displayed, placed after the output so far: the kernel sent that output
   * first, so a partial line before it is sent now rather than after it.
   */
  placeLive(entry: KernelDisplay): DisplayEntry {
    this.#flushPartial();
    return this.#place(entry);
  }

  #place({ output_chars: chars, ...rest }: KernelDisplay): DisplayEntry {
    return { ...rest, afterOutput: this.#starts.filter((start) => start < (chars ?? Infinity)).length } as DisplayEntry;
  }

  #send(stream: StreamName, data: string, newline: number): void {
    this.#cut = newline ? null : stream;
    this.#starts.push(this.#offset);
    this.#offset += codePoints(data) + newline;
    this.emit({ stream, data, seq: this.#seq++ });
  }

  #flushPartial(): void {
    this.#clearTimer();
    const partial = this.#partial;
    this.#partial = null;
    if (partial) this.#send(partial.stream, partial.text, 0);
  }

  #clearTimer(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

function codePoints(text: string): number {
  return text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0);
}
