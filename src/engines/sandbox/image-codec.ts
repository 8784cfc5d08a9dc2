import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';
import { Worker } from 'node:worker_threads';

/**
 * The worker ends after this long without work, and gives its memory back (~6 MB). A machine's
 * saves come a second after its last instruction; its swap-in usually follows minutes of quiet,
 * which no idle time short of those minutes would bridge.
 */
const IDLE_MS = 2_000;
/**
 * A section of at most this many bytes (decompressed) is compressed or decompressed on this
 * thread, since a trivial machine's save or swap-in would otherwise wait ~30 ms for the thread
 * to start, longer than the rest of it: with Node's own zstd (from Node 22.15 and 23.8; VS Code
 * runs the server on such a Node), else with the wasm package, loaded here at the first such
 * section (~5 MB, kept; its memory grows to the largest section it has handled, hence the bound).
 * A larger section goes to Node's own zstd off this thread (its thread pool), which is 2.5 times
 * the wasm package's speed, else to the thread, rather than hold up the server's other requests.
 */
const HERE_BYTES = 4 << 20;
/** Node's zstd output pieces are at least this large (its own default). */
const MIN_CHUNK_BYTES = 16 << 10;
type ZstdOptions = { params: Record<number, number>; pledgedSrcSize: number };
type Done = (error: Error | null, result: Uint8Array) => void;
const nativeZstd = zlib as {
  zstdDecompressSync?: (bytes: Uint8Array, options: { chunkSize: number }) => Uint8Array;
  zstdCompressSync?: (bytes: Uint8Array, options: ZstdOptions) => Uint8Array;
  zstdDecompress?: (bytes: Uint8Array, options: { chunkSize: number }, done: Done) => void;
  zstdCompress?: (bytes: Uint8Array, options: ZstdOptions, done: Done) => void;
  constants: { ZSTD_c_compressionLevel?: number };
};
const LEVEL_PARAMETER = nativeZstd.constants.ZSTD_c_compressionLevel;
/** Node's own zstd, where this Node has it. */
const native =
  nativeZstd.zstdCompressSync && nativeZstd.zstdDecompressSync && nativeZstd.zstdCompress && nativeZstd.zstdDecompress && LEVEL_PARAMETER !== undefined
    ? {
        compressSync: nativeZstd.zstdCompressSync,
        decompressSync: nativeZstd.zstdDecompressSync,
        compress: promisify(nativeZstd.zstdCompress) as (bytes: Uint8Array, options: ZstdOptions) => Promise<Uint8Array>,
        decompress: promisify(nativeZstd.zstdDecompress) as (bytes: Uint8Array, options: { chunkSize: number }) => Promise<Uint8Array>,
        options: (bytes: Uint8Array, level: number): ZstdOptions => ({ params: { [LEVEL_PARAMETER]: level }, pledgedSrcSize: bytes.length }),
      }
    : undefined;
type Zstd = { init(): Promise<void>; compress(bytes: Uint8Array, level: number): Uint8Array; decompress(bytes: Uint8Array): Uint8Array };
let zstdHere: Promise<Zstd> | undefined;
/**
 * A job this large (a base image, a big machine) grows the worker's memory by several times its
 * size: the worker ends as soon as it is idle, rather than keep that for the idle time.
 */
const LARGE_JOB_BYTES = 8 << 20;

/**
 * The thread's code, as CommonJS: it only loads the zstd package, which the bundle keeps as a
 * package on disk (it reads its wasm beside itself), so it needs no file of its own.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const zstd = require(workerData.zstd);
const ready = zstd.init();
parentPort.on('message', async ({ id, op, bytes, level }) => {
  try {
    await ready;
    const out = new Uint8Array(op === 'compress' ? zstd.compress(bytes, level) : zstd.decompress(bytes));
    parentPort.postMessage({ id, bytes: out }, [out.buffer]);
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  }
});`;

type Reply = { id: number; bytes: Uint8Array } | { id: number; error: string };

/**
 * zstd for machine images, in a thread of its own that ends when unused. The wasm memory zstd
 * works in grows to the largest image it has handled and never shrinks: in the server, one large
 * machine would keep that much for good. Ending the thread gives it back, and compressing a large
 * heap no longer holds up the server's other requests.
 */
class ImageCodec {
  #worker?: Worker;
  #idle?: NodeJS.Timeout;
  #nextId = 0;
  /** The current worker has handled a large job. */
  #grown = false;
  readonly #pending = new Map<number, { resolve(bytes: Uint8Array): void; reject(error: Error): void }>();

  /**
   * `offThread`: done where it does not hold up this thread's other work (Node's thread pool, or
   * the codec's thread); by default for sections larger than this thread takes.
   */
  async compress(bytes: Uint8Array, level: number, offThread = bytes.length > HERE_BYTES): Promise<Uint8Array> {
    if (native)
      return here(async () =>
        offThread ? await native.compress(bytes, native.options(bytes, level)) : native.compressSync(bytes, native.options(bytes, level)),
      );
    if (offThread) return this.#call({ op: 'compress', bytes, level });
    return here(async () => (await (zstdHere ??= loadZstd())).compress(bytes, level));
  }

  async decompress(bytes: Uint8Array, offThread?: boolean): Promise<Uint8Array> {
    const size = frameContentSize(bytes);
    const away = offThread ?? !(size !== undefined && size <= HERE_BYTES);
    if (!native && away) return this.#call({ op: 'decompress', bytes });
    // A copy of its own, aligned: Pyodide reads a snapshot's header as 32-bit words.
    // Node's zstd writes its output 16 KiB at a time and joins the pieces, unless told how much
    // comes: 2.7 times as long for 80 MB (measured, Node 22).
    const options = { chunkSize: Math.max(size ?? 0, MIN_CHUNK_BYTES) };
    const out = await here(async () =>
      aligned(
        native ? (away ? await native.decompress(bytes, options) : native.decompressSync(bytes, options)) : (await (zstdHere ??= loadZstd())).decompress(bytes),
      ),
    );
    // Node's zstd returns what it could of a cut frame, without an error.
    if (size !== undefined && out.length !== size) throw new Error(`zstd: the data is damaged (${out.length} bytes of ${size})`);
    return out;
  }

  #call(job: { op: 'compress' | 'decompress'; bytes: Uint8Array; level?: number }): Promise<Uint8Array> {
    clearTimeout(this.#idle);
    const worker = (this.#worker ??= this.#start());
    // Held open only while it works: an idle thread must not keep the process alive.
    worker.ref();
    const id = this.#nextId++;
    // Only these bytes are sent, rather than cloned with the buffer they view.
    const bytes = job.bytes.slice();
    if (bytes.length >= LARGE_JOB_BYTES) this.#grown = true;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...job, bytes }, [bytes.buffer as ArrayBuffer]);
    });
  }

  #start(): Worker {
    this.#grown = false;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { zstd: createRequire(import.meta.url).resolve('@bokuweb/zstd-wasm') } });
    worker.on('message', (reply: Reply) => {
      const waiting = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if ('error' in reply) waiting?.reject(new Error(`zstd: ${reply.error}`));
      else waiting?.resolve(reply.bytes);
      if (!this.#pending.size) {
        worker.unref();
        this.#stopWhenIdle(worker);
      }
    });
    const fail = (error: Error) => {
      // A thread ended when idle has nothing pending: what is pending now is its successor's.
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      for (const waiting of this.#pending.values()) waiting.reject(error);
      this.#pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the zstd thread exited (${code})`)));
    return worker;
  }

  #stopWhenIdle(worker: Worker): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(
      () => {
        if (this.#worker !== worker || this.#pending.size) return;
        this.#worker = undefined;
        void worker.terminate();
      },
      this.#grown ? 0 : IDLE_MS,
    );
    this.#idle.unref();
  }
}

/** `bytes` as a plain Uint8Array over a buffer of their own, from its start (a copy if they share one). */
function aligned(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? new Uint8Array(bytes.buffer, 0, bytes.length) : new Uint8Array(bytes);
}

/** zstd's work here (this thread, or Node's pool for it), with its errors said as the thread's are. */
async function here(work: () => Promise<Uint8Array>): Promise<Uint8Array> {
  try {
    return await work();
  } catch (error) {
    throw new Error(`zstd: ${(error as Error).message}`, { cause: error });
  }
}

/** The zstd package, on this thread. */
function loadZstd(): Promise<Zstd> {
  const zstd = createRequire(import.meta.url)('@bokuweb/zstd-wasm') as Zstd;
  const loaded = zstd.init().then(() => zstd);
  loaded.catch(() => (zstdHere = undefined));
  return loaded;
}

/**
 * The size a zstd frame says it decompresses to (RFC 8878, 3.1.1.1), or undefined when it does
 * not say or is not a frame; the compressor writes it.
 */
function frameContentSize(bytes: Uint8Array): number | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 6 || view.getUint32(0, true) !== 0xfd2fb528) return undefined;
  const descriptor = bytes[4]!;
  const singleSegment = (descriptor >> 5) & 1;
  const at = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 3]!;
  const width = [singleSegment ? 1 : 0, 2, 4, 8][descriptor >> 6]!;
  if (!width || at + width > bytes.length) return undefined;
  if (width === 1) return view.getUint8(at);
  if (width === 2) return view.getUint16(at, true) + 256;
  if (width === 4) return view.getUint32(at, true);
  return Number(view.getBigUint64(at, true));
}

/** The one codec of this process. */
export const imageCodec = new ImageCodec();
