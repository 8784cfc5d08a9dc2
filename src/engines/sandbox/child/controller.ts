/**
 * The sandbox process's main thread. It relays messages between the host (IPC) and the Pyodide
 * worker, and answers `interrupt` itself by writing the worker's interrupt buffer — which works
 * even while the worker is busy running Python. Every `load` gets a new worker: a Pyodide
 * instance cannot be reloaded in place. The first worker starts with the process, so that it has
 * Pyodide booted ahead by the time the machine to load arrives.
 */
import './harden.ts';
import { Worker } from 'node:worker_threads';
import { setTimeout as delay } from 'node:timers/promises';
import { TextDecoder } from 'node:util';
import type { ChildMessage, HostMessage } from '../protocol.ts';
import { OutputRing, type RingStream } from './output-ring.ts';

const [pyodideDir] = process.argv.slice(2);
if (!process.send || !pyodideDir) {
  process.stderr.write('usage: controller.js <pyodide dir> (with an IPC channel)\n');
  process.exit(2);
}
const send = (message: ChildMessage) => process.send!(message);

/** How long output is gathered after a first write, so that a burst of prints crosses in one message. */
const OUTPUT_GATHER_MS = 10;

/** Sends what the worker printed since the last time, a message per run of one stream. */
function sendOutput(ring: OutputRing, decoders: Record<RingStream, TextDecoder>): void {
  let pending: Extract<ChildMessage, { type: 'out' }> | undefined;
  for (const { stream, bytes } of ring.take()) {
    const text = decoders[stream].decode(bytes, { stream: true });
    if (pending?.stream === stream) pending.text += text;
    else {
      if (pending) send(pending);
      pending = { type: 'out', stream, text };
    }
  }
  if (pending) send(pending);
}

const interruptBuffer = new Int32Array(new SharedArrayBuffer(4));
/** The worker of the machine loaded now. */
let worker: Worker | undefined;
/** The worker started with the process, until a `load` takes it. */
let ahead: Worker | undefined;

function startWorker(): Worker {
  const ring = OutputRing.create();
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  const next = new Worker(new URL('./worker.js', import.meta.url), {
    workerData: { pyodideDir, interruptBuffer, output: ring.shared },
    // Python reaching the JS heap through `js` must not take the process down with it.
    resourceLimits: { maxOldGenerationSizeMb: 512 },
  });
  // Whatever the worker says, it says after what it printed before.
  const output = () => next === worker && sendOutput(ring, decoders);
  next.on('message', (message: ChildMessage) => {
    if (next !== worker) return;
    output();
    send(message);
  });
  next.on('error', (error) => {
    output();
    if (worker === next) fail(`the Python worker failed: ${error.message}`);
  });
  next.on('exit', (code) => {
    output();
    ring.close();
    if (worker === next) fail(`the Python worker exited with code ${code}`);
  });
  // Read while the worker runs Python: that is when it cannot send anything itself.
  void (async () => {
    while (!ring.closed) {
      await ring.written();
      await delay(OUTPUT_GATHER_MS);
      output();
    }
  })();
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
