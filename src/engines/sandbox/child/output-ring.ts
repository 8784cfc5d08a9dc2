/**
 * What a cell prints, from the Pyodide worker to the sandbox process's main thread through shared
 * memory. While Python runs, the worker cannot send messages of its own accord, and a message per
 * print costs more than the print; so each write is copied into this ring, and the main thread,
 * woken by the first write after a quiet spell, takes everything written in the meantime.
 *
 * One writer (the worker) and one reader (the main thread). The header holds two positions that
 * only grow (modulo 2^32): bytes written and bytes read; the data area is a power of two long.
 * Each record is a stream byte, a 32-bit length and the bytes.
 */

const WRITTEN = 0;
const READ = 1;
const HEADER_BYTES = 8;
const RECORD_HEADER = 5;
/** A writer finding the ring full waits this long at most before it looks again. */
const FULL_WAIT_MS = 50;

export type RingStream = 'stdout' | 'stderr';

export class OutputRing {
  readonly #positions: Int32Array;
  readonly #data: Uint8Array;
  readonly #mask: number;
  #closed = false;

  constructor(readonly shared: SharedArrayBuffer) {
    this.#positions = new Int32Array(shared, 0, 2);
    this.#data = new Uint8Array(shared, HEADER_BYTES);
    this.#mask = this.#data.length - 1;
    if (this.#data.length & this.#mask) throw new Error('the output ring must hold a power of two bytes');
  }

  /** A ring with room for `capacity` bytes (a power of two). */
  static create(capacity = 1 << 16): OutputRing {
    return new OutputRing(new SharedArrayBuffer(HEADER_BYTES + capacity));
  }

  /** Writer: copies `bytes` in, waiting while the reader makes room; long writes go in pieces. */
  write(stream: RingStream, bytes: Uint8Array): void {
    const largest = this.#data.length - RECORD_HEADER;
    for (let at = 0; at < bytes.length; at += largest) {
      const piece = bytes.subarray(at, at + largest);
      const written = Atomics.load(this.#positions, WRITTEN);
      let read: number;
      while (this.#data.length - ((written - (read = Atomics.load(this.#positions, READ))) >>> 0) < RECORD_HEADER + piece.length) {
        Atomics.wait(this.#positions, READ, read, FULL_WAIT_MS);
      }
      // The record's header, byte by byte: it may wrap around the end.
      const header = [stream === 'stderr' ? 1 : 0, piece.length >>> 24, (piece.length >>> 16) & 255, (piece.length >>> 8) & 255, piece.length & 255];
      for (let i = 0; i < RECORD_HEADER; i++) this.#data[(written + i) & this.#mask] = header[i]!;
      this.#copyIn(written + RECORD_HEADER, piece);
      Atomics.store(this.#positions, WRITTEN, (written + RECORD_HEADER + piece.length) | 0);
      Atomics.notify(this.#positions, WRITTEN);
    }
  }

  /** Reader: every record written since the last call, in order; frees their room. */
  take(): Array<{ stream: RingStream; bytes: Uint8Array }> {
    const written = Atomics.load(this.#positions, WRITTEN);
    let read = Atomics.load(this.#positions, READ);
    const records: Array<{ stream: RingStream; bytes: Uint8Array }> = [];
    while (read !== written) {
      const header = this.#copyOut(read, RECORD_HEADER);
      const length = ((header[1]! << 24) | (header[2]! << 16) | (header[3]! << 8) | header[4]!) >>> 0;
      records.push({ stream: header[0] === 1 ? 'stderr' : 'stdout', bytes: this.#copyOut(read + RECORD_HEADER, length) });
      read = (read + RECORD_HEADER + length) | 0;
    }
    Atomics.store(this.#positions, READ, read);
    Atomics.notify(this.#positions, READ);
    return records;
  }

  /** Reader: resolves once something has been written that `take` has not returned, or at `close`. */
  async written(): Promise<void> {
    const written = Atomics.load(this.#positions, WRITTEN);
    if (this.#closed || written !== Atomics.load(this.#positions, READ)) return;
    const waiting = Atomics.waitAsync(this.#positions, WRITTEN, written);
    if (waiting.async) await waiting.value;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Reader: the writer is gone; a pending `written` resolves. */
  close(): void {
    this.#closed = true;
    Atomics.notify(this.#positions, WRITTEN);
  }

  #copyIn(position: number, bytes: Uint8Array): void {
    const start = position & this.#mask;
    const first = Math.min(bytes.length, this.#data.length - start);
    this.#data.set(bytes.subarray(0, first), start);
    this.#data.set(bytes.subarray(first), 0);
  }

  #copyOut(position: number, length: number): Uint8Array {
    const start = position & this.#mask;
    const first = Math.min(length, this.#data.length - start);
    const bytes = new Uint8Array(length);
    bytes.set(this.#data.subarray(start, start + first));
    bytes.set(this.#data.subarray(0, length - first), first);
    return bytes;
  }
}
