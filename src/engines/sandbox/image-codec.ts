import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The worker ends after this long without work, and gives its memory back. */
const IDLE_MS = 20_000;
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

  compress(bytes: Uint8Array, level: number): Promise<Uint8Array> {
    return this.#call({ op: 'compress', bytes, level });
  }

  decompress(bytes: Uint8Array): Promise<Uint8Array> {
    return this.#call({ op: 'decompress', bytes });
  }

  #call(job: { op: 'compress' | 'decompress'; bytes: Uint8Array; level?: number }): Promise<Uint8Array> {
    clearTimeout(this.#idle);
    const worker = (this.#worker ??= this.#start());
    // Held open only while it works: an idle thread must not keep the process alive.
    worker.ref();
    const id = this.#nextId++;
    // Its own copy of just these bytes, handed over rather than cloned with the buffer it views.
    const bytes = job.bytes.slice();
    if (bytes.length >= LARGE_JOB_BYTES) this.#grown = true;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...job, bytes }, [bytes.buffer]);
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
      if (this.#worker === worker) this.#worker = undefined;
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

/** The one codec of this process. */
export const imageCodec = new ImageCodec();
