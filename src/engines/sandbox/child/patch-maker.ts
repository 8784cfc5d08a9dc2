import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { MemoryLayout } from './dead-memory.ts';
import { startOwnWorker } from './harden.ts';
import type { BaseMemoryLayout, PageRuns } from './heap-pages.ts';

/** What the patch thread is given: the machine's memory as it was at the pause (a copy, handed over). */
export interface PatchJob {
  id: number;
  /** A copy of the machine's memory: its pages in use at the pause; what lies outside them is never read. */
  heap: Uint8Array;
  /** The snapshot's bytes before its heap. */
  header: Uint8Array;
  layout: MemoryLayout;
  /** Where the memory may hold anything alive (`memoryInUse`): the rest counts as the base's. */
  inUse: PageRuns;
  base: BaseMemoryLayout;
}

/** The patch, or why there is none; and the copy, handed back to be filled again at the next snapshot. */
export type PatchAnswer = ({ id: number; patch: Uint8Array; timings: Record<string, number> } | { id: number; error: string }) & { heap: Uint8Array };

/**
 * A thread, and the copy's room, stay this long after the last patch: a machine saved again soon
 * finds them ready (filling fresh room costs a page fault per page: ~10 ms of a 20 ms pause).
 */
const IDLE_MS = 10_000;

/**
 * Makes snapshots' patches on a thread of the sandbox process, so that a checkpoint pauses the
 * machine only while its live memory is copied: comparing ~15 MiB with the base, finding the
 * dead memory and building the patch (~30–40 ms of a trivial machine's, hundreds for a large
 * one) happen while it runs on. The thread starts at the first patch and ends when idle: a
 * thread costs memory, and most machines are saved seldom.
 */
export class PatchMaker {
  #worker?: Worker;
  #next = 1;
  readonly #waiting = new Map<number, { resolve(answer: PatchAnswer): void; reject(error: Error): void }>();
  #idle?: NodeJS.Timeout;
  /** The last copy's room, back from the thread. */
  #room?: Uint8Array;

  /**
   * Copies `memory`'s pages in use (the machine's pause), then has the thread make the patch of
   * the copy on its base: answers with it, and where the thread's time went.
   */
  make({ memory, ...job }: Omit<PatchJob, 'id' | 'heap'> & { memory: Uint8Array }): Promise<{ patch: Uint8Array; timings: Record<string, number> }> {
    clearTimeout(this.#idle);
    const heap = this.#room?.length === memory.length ? this.#room : new Uint8Array(memory.length);
    this.#room = undefined;
    for (const [from, to] of job.inUse) heap.set(memory.subarray(from, to), from);
    const worker = this.#start();
    const id = this.#next++;
    return new Promise<PatchAnswer>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      worker.postMessage({ ...job, heap, id } satisfies PatchJob, [heap.buffer as ArrayBuffer]);
    }).then((answer) => {
      this.#room = answer.heap;
      if ('error' in answer) throw new Error(`the snapshot's patch could not be made: ${answer.error}`);
      return answer;
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = startOwnWorker(fileURLToPath(new URL('./patch-thread.js', import.meta.url)));
    worker.on('message', (answer: PatchAnswer) => {
      this.#waiting.get(answer.id)?.resolve(answer);
      this.#waiting.delete(answer.id);
      if (this.#waiting.size) return;
      this.#idle = setTimeout(() => {
        // Gone from here first: a patch asked for meanwhile starts a thread of its own.
        this.#worker = undefined;
        this.#room = undefined;
        void worker.terminate();
      }, IDLE_MS);
      this.#idle.unref();
    });
    const ended = (error: Error) => {
      // A thread let go when idle has no patches to make; one that failed had them all.
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      for (const job of this.#waiting.values()) job.reject(error);
      this.#waiting.clear();
    };
    worker.on('error', ended);
    worker.on('exit', () => ended(new Error('the patch thread ended')));
    // A thread never keeps the process alive: it ends with its host.
    worker.unref();
    this.#worker = worker;
    return worker;
  }
}
