import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { MemoryLayout } from './dead-memory.ts';
import { startOwnWorker } from './harden.ts';
import { PAGE, type BaseMemoryLayout, type PageRuns } from './heap-pages.ts';

/** What the patch thread is asked: a snapshot's patch, or room for the next copy (and to warm up on `base`). */
export type PatchRequest = PatchJob | { type: 'room'; length: number; base: BaseMemoryLayout };

/** A snapshot's patch, from the machine's memory as it was at the pause (a copy, handed over). */
export interface PatchJob {
  type: 'patch';
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

/** The patch, or why there is none, with the copy handed back; or room asked for, every page of it touched. */
export type PatchAnswer =
  | ({ type: 'patch'; id: number; heap: Uint8Array } & ({ patch: Uint8Array; timings: Record<string, number> } | { error: string }))
  | { type: 'room'; room: Uint8Array };

/** A thread, and the copy's room, stay this long after they were last needed: a machine in use is saved after each quiet second. */
const IDLE_MS = 10_000;
/** The quiet after a cell before the thread is made ready: half the time before the save it expects. */
const QUIET_MS = 500;

/**
 * Makes snapshots' patches on a thread of the sandbox process, so that a checkpoint pauses the
 * machine only while its memory in use is copied (~15 MiB of a trivial machine's, a few ms):
 * comparing it with the base, finding the dead memory and building the patch (~30–40 ms of a
 * trivial machine's, hundreds for a large one) happen while it runs on. The copy goes into room
 * whose pages were touched ahead: fresh pages cost a fault each, ~10 ms of a 20 ms pause.
 *
 * The thread (~10 MB, ~60 ms to start) and the room (the size of the memory) follow demand: made
 * when the machine changed and is quiet (`expect`), as its save comes a second later, and let go
 * when idle, so that a machine nobody uses costs nothing more.
 */
export class PatchMaker {
  #worker?: Worker;
  #next = 1;
  readonly #waiting = new Map<number, { resolve(answer: Extract<PatchAnswer, { type: 'patch' }>): void; reject(error: Error): void }>();
  #idle?: NodeJS.Timeout;
  /** When the thread is made ready for the snapshot `expect`ed. */
  #soon?: NodeJS.Timeout;
  #room?: Uint8Array;
  #roomAsked = false;
  /** What reading the memory's pages gave: kept, so that the reading is not optimized away. */
  touched = 0;

  /**
   * A snapshot of the memory `memory()` gives (on `base`) is likely soon: once the machine has
   * been quiet for a moment, the thread starts and makes room, if it has not. A machine given cell
   * after cell, or made and dropped at once, starts none meanwhile.
   */
  expect(memory: () => Uint8Array, base: BaseMemoryLayout): void {
    clearTimeout(this.#soon);
    this.#soon = setTimeout(() => this.#prepare(memory(), base), QUIET_MS);
    this.#soon.unref();
  }

  /** The machine is let go: no snapshot of it is coming, and room the size of its memory is not needed. */
  forget(): void {
    clearTimeout(this.#soon);
    this.#room = undefined;
  }

  #prepare(memory: Uint8Array, base: BaseMemoryLayout): void {
    const worker = this.#start();
    // A patch under way brings its copy back as room.
    if (this.#room?.length !== memory.length && !this.#roomAsked && !this.#waiting.size) {
      this.#roomAsked = true;
      worker.postMessage({ type: 'room', length: memory.length, base } satisfies PatchRequest);
      // A restored machine's memory has pages never written, which the copy's first read maps
      // one fault at a time (~5 ms of a pause): read once here, while the machine waits.
      let sum = 0;
      for (let at = 0; at < memory.length; at += PAGE) sum += memory[at]!;
      this.touched = sum;
    }
    if (!this.#waiting.size) this.#stopWhenIdle();
  }

  /**
   * Copies `memory`'s pages in use (the machine's pause), then has the thread make the patch of
   * the copy on its base: answers with it, and where the thread's time went.
   */
  make(memory: Uint8Array, job: Omit<PatchJob, 'type' | 'id' | 'heap'>): Promise<{ patch: Uint8Array; timings: Record<string, number> }> {
    const heap = this.#room?.length === memory.length ? this.#room : new Uint8Array(memory.length);
    this.#room = undefined;
    for (const [from, to] of job.inUse) heap.set(memory.subarray(from, to), from);
    const worker = this.#start();
    const id = this.#next++;
    return new Promise<Extract<PatchAnswer, { type: 'patch' }>>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      worker.postMessage({ ...job, type: 'patch', id, heap } satisfies PatchRequest, [heap.buffer as ArrayBuffer]);
    }).then((answer) => {
      if ('error' in answer) throw new Error(`the snapshot's patch could not be made: ${answer.error}`);
      return answer;
    });
  }

  #start(): Worker {
    clearTimeout(this.#idle);
    if (this.#worker) return this.#worker;
    const worker = startOwnWorker(fileURLToPath(new URL('./patch-thread.js', import.meta.url)));
    worker.on('message', (answer: PatchAnswer) => {
      if (answer.type === 'room') {
        this.#roomAsked = false;
        if (this.#worker === worker) this.#room = answer.room;
        return;
      }
      // The copy is room for the next one.
      if (this.#worker === worker) this.#room = answer.heap;
      this.#waiting.get(answer.id)?.resolve(answer);
      this.#waiting.delete(answer.id);
      if (!this.#waiting.size) this.#stopWhenIdle();
    });
    const ended = (error: Error) => {
      // A thread let go when idle has no patches to make; one that failed had them all.
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#roomAsked = false;
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

  #stopWhenIdle(): void {
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => {
      // Gone from here first: a patch asked for meanwhile starts a thread of its own.
      const worker = this.#worker;
      this.#worker = undefined;
      this.#room = undefined;
      this.#roomAsked = false;
      void worker?.terminate();
    }, IDLE_MS);
    this.#idle.unref();
  }
}
