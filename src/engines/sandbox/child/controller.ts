/**
 * The sandbox process's main thread. It relays messages between the host (IPC) and the Pyodide
 * worker, and answers `interrupt` itself by writing the worker's interrupt buffer — which works
 * even while the worker is busy running Python. Every `load` gets a new worker: a Pyodide
 * instance cannot be reloaded in place. The first worker starts with the process, so that it has
 * Pyodide booted ahead by the time the machine to load arrives.
 */
import './harden.ts';
import { Worker } from 'node:worker_threads';
import type { ChildMessage, HostMessage } from '../protocol.ts';

const [pyodideDir] = process.argv.slice(2);
if (!process.send || !pyodideDir) {
  process.stderr.write('usage: controller.js <pyodide dir> (with an IPC channel)\n');
  process.exit(2);
}
const send = (message: ChildMessage) => process.send!(message);
const interruptBuffer = new Int32Array(new SharedArrayBuffer(4));
/** The worker of the machine loaded now. */
let worker: Worker | undefined;
/** The worker started with the process, until a `load` takes it. */
let ahead: Worker | undefined;

function startWorker(): Worker {
  const next = new Worker(new URL('./worker.js', import.meta.url), {
    workerData: { pyodideDir, interruptBuffer },
    // Python reaching the JS heap through `js` must not take the process down with it.
    resourceLimits: { maxOldGenerationSizeMb: 512 },
  });
  next.on('message', (message: ChildMessage) => {
    if (next === worker) send(message);
  });
  next.on('error', (error) => {
    if (worker === next) fail(`the Python worker failed: ${error.message}`);
  });
  next.on('exit', (code) => {
    if (worker === next) fail(`the Python worker exited with code ${code}`);
  });
  return next;
}

function fail(error: string): void {
  send({ type: 'fatal', error });
  // The host restores the machine from its snapshot in a new process.
  setImmediate(() => process.exit(1));
}

process.on('message', (message: HostMessage) => {
  if (message.type === 'interrupt') {
    Atomics.store(interruptBuffer, 0, 2); // SIGINT
    return;
  }
  if (message.type === 'prefetch') {
    ahead?.postMessage(message);
    return;
  }
  if (message.type === 'load') {
    const old = worker;
    worker = ahead ?? startWorker();
    ahead = undefined;
    void old?.terminate();
  }
  if (!worker) {
    send({ type: 'reply', id: (message as { id: number }).id, ok: false, error: 'no machine is loaded in this sandbox' });
    return;
  }
  // After IPC both images may share one buffer: transfer each buffer once.
  const image = message.type === 'load' ? message.image : undefined;
  const transfer = image ? [...new Set([('patch' in image ? image.patch : image.snapshot).buffer, image.files.buffer])] : [];
  try {
    worker.postMessage(message, transfer as ArrayBuffer[]);
    // The image arrived here over IPC and is now the worker's: free this thread's share of it.
    if (message.type === 'load') setTimeout(() => (globalThis as { gc?: () => void }).gc?.(), 100);
  } catch (error) {
    send({ type: 'reply', id: (message as { id: number }).id, ok: false, error: `could not pass the message to the machine: ${(error as Error).message}` });
  }
});
// The host is gone: nothing may outlive it.
process.on('disconnect', () => process.exit(0));
ahead = startWorker();
send({ type: 'waiting' });
