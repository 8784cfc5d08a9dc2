/**
 * The Pyodide thread of a sandbox process: boots or restores one machine, runs the kernel's
 * commands, and takes memory snapshots. One worker serves one `load`.
 */
import './harden.ts';
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import type { ChildMessage, HostMessage, MachineConfig, MachineImage } from '../protocol.ts';
import { recordDynlibs, withDynlibReplay, type EmscriptenModule } from './dynlibs.ts';
import { archiveFiles, restoreFiles, type EmscriptenFS } from './fs-archive.ts';

/** The parts of the Pyodide API the worker uses. */
interface Pyodide {
  version: string;
  FS: EmscriptenFS;
  loadedPackages: Record<string, string>;
  runPython(code: string): unknown;
  setStdout(options: { write(buffer: Uint8Array): number }): void;
  setStderr(options: { write(buffer: Uint8Array): number }): void;
  setInterruptBuffer(buffer: Int32Array): void;
  makeMemorySnapshot(options?: { serializer?: (object: unknown) => unknown }): Uint8Array;
  mountNodeFS(emscriptenPath: string, hostPath: string): void;
  loadPackage(names: string[], options?: { messageCallback?: (m: string) => void; errorCallback?: (m: string) => void }): Promise<unknown>;
  _module: EmscriptenModule & { __hiwire_set(index: number, value: unknown): void };
  _api: { config: Record<string, unknown>; sitepackages: string; dsodir: string };
}
type LoadPyodide = (options: Record<string, unknown>) => Promise<Pyodide>;
/** A Python coroutine as JavaScript sees it: awaitable, and to be destroyed after. */
type PyAwaitable = PromiseLike<string> & { destroy(): void };
type DriverCall = ((op: string, args: string) => string | PyAwaitable) & { destroy(): void };

const { pyodideDir, interruptBuffer } = workerData as { pyodideDir: string; interruptBuffer: Int32Array };
const port = parentPort!;
const KERNEL_DIR = '/opt/perennial';
const HOME = '/home/pyodide';
/** Slot 6 of Pyodide's hiwire table is `loadedPackages`; a snapshot insists that it equals {}. */
const LOADED_PACKAGES_SLOT = 6;

let py: Pyodide | undefined;
let call: DriverCall | undefined;

function post(message: ChildMessage, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

/** The WebAssembly heap's cap: an allocation beyond it is a MemoryError, not a crash. */
let memoryLimit = Infinity;
{
  const grow = WebAssembly.Memory.prototype.grow;
  WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, pages: number) {
    // Emscripten's growMemory catches this: malloc returns NULL and Python raises MemoryError.
    if (this.buffer.byteLength + pages * 65536 > memoryLimit) throw new RangeError('the machine memory cap is reached');
    return grow.call(this, pages);
  };
}

/** Pyodide reads the snapshot header as 32-bit words; an IPC copy may not be aligned. */
function aligned(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset % 8 === 0 ? bytes : new Uint8Array(bytes);
}

/**
 * What does not depend on the machine, done as the worker starts (before its `load` arrives):
 * - pyodide.asm.js is loaded as a plain script. `loadPyodide` would `import()` it, and Node's ESM
 *   loader spends ~150 ms detecting the format of this 1 MB file and scanning it for exports;
 *   with `_createPyodideModule` defined, `loadPyodide` uses it as it is.
 * - The wasm module is compiled, and `loadPyodide`'s instantiation is given the compiled module.
 */
const prepared = (async () => {
  createRequire(import.meta.url)(join(pyodideDir, 'pyodide.asm.js'));
  const compiled = await WebAssembly.compile(readFileSync(join(pyodideDir, 'pyodide.asm.wasm')));
  const instantiate = WebAssembly.instantiate;
  const wasmBytes = statSync(join(pyodideDir, 'pyodide.asm.wasm')).size;
  WebAssembly.instantiate = function (source: unknown, imports?: Record<string, Record<string, unknown>>) {
    const isMain = (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) && source.byteLength === wasmBytes;
    if (isMain) return instantiate.call(WebAssembly, compiled, imports).then((instance: unknown) => ({ instance, module: compiled }));
    return (instantiate as (...args: unknown[]) => unknown).apply(WebAssembly, [source, imports]);
  } as typeof WebAssembly.instantiate;
  return (await import(pathToFileURL(join(pyodideDir, 'pyodide.mjs')).href)) as { loadPyodide: LoadPyodide };
})();
prepared.catch(() => {});

async function load(message: Extract<HostMessage, { type: 'load' }>): Promise<void> {
  const started = performance.now();
  const { config, image } = message;
  memoryLimit = config.memoryMb * 1024 * 1024;
  const { loadPyodide } = await prepared;
  const options: Record<string, unknown> = {
    indexURL: pyodideDir + '/',
    env: { HOME, MPLBACKEND: 'Agg' },
    _makeSnapshot: true,
  };
  if (image) py = await restore(loadPyodide, options, image);
  else {
    py = await loadPyodide(options);
    py.FS.mkdirTree(KERNEL_DIR);
    py.FS.writeFile(`${KERNEL_DIR}/perennial_kernel.py`, new TextEncoder().encode(message.kernelSource ?? ''));
    py.runPython(
      `import sys\nsys.path.insert(0, ${JSON.stringify(KERNEL_DIR)})\nimport perennial_kernel\nsys.path.remove(${JSON.stringify(KERNEL_DIR)})\nperennial_kernel.start_emscripten(${config.outputLimit})`,
    );
  }
  connect(py, config);
  // Pyodide keeps the snapshot it booted from alive, and the load message holds the image: tens
  // of MiB. Collect them once this message is handled, rather than carry them in the machine.
  delete py._api.config._loadSnapshot;
  setTimeout(() => (globalThis as { gc?: () => void }).gc?.(), 0);
  post({ type: 'loaded', id: message.id, ms: performance.now() - started });
}

async function restore(loadPyodide: LoadPyodide, options: Record<string, unknown>, image: MachineImage): Promise<Pyodide> {
  const snapshot = aligned(image.snapshot);
  const { dynlibs, loadedPackages, tableLength } = image.meta;
  let instance: Pyodide;
  if (dynlibs.length) {
    const heapOffset = new DataView(snapshot.buffer, snapshot.byteOffset, 8).getUint32(4, true);
    instance = await withDynlibReplay(
      dynlibs,
      snapshot.subarray(heapOffset),
      tableLength,
      (module) => restoreFiles((module as unknown as { FS: EmscriptenFS }).FS, image.files),
      () => loadPyodide({ ...options, _loadSnapshot: snapshot }),
    );
  } else {
    instance = await loadPyodide({ ...options, _loadSnapshot: snapshot });
    restoreFiles(instance.FS, image.files);
  }
  Object.assign(instance.loadedPackages, loadedPackages);
  instance._module.__hiwire_set(LOADED_PACKAGES_SLOT, instance.loadedPackages);
  instance.runPython('import perennial_kernel\nperennial_kernel._DRIVER.after_restore()');
  return instance;
}

/** What every boot needs again: streams, the interrupt buffer, the workspace mount. */
function connect(instance: Pyodide, config: MachineConfig): void {
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  const writer = (stream: 'stdout' | 'stderr') => ({
    write(buffer: Uint8Array): number {
      post({ type: 'out', stream, text: decoders[stream].decode(buffer, { stream: true }) });
      return buffer.length;
    },
  });
  instance.setStdout(writer('stdout'));
  instance.setStderr(writer('stderr'));
  instance.setInterruptBuffer(interruptBuffer);
  let cwd = HOME;
  if (config.workspace) {
    instance.FS.mkdirTree('/workspace');
    instance.mountNodeFS('/workspace', config.workspace.hostPath);
    cwd = '/workspace';
  }
  instance.runPython(`import os\nos.chdir(${JSON.stringify(cwd)})`);
  call?.destroy();
  call = instance.runPython('import perennial_kernel\nperennial_kernel._DRIVER.call') as DriverCall;
}

async function runCommand(id: number, op: string, args: Record<string, unknown>): Promise<void> {
  try {
    const answer = call!(op, JSON.stringify(args));
    let text: string;
    if (typeof answer === 'string') text = answer;
    else {
      try {
        text = await answer;
      } finally {
        answer.destroy();
      }
    }
    const reply = JSON.parse(text) as { ok: true; result: unknown } | { ok: false; error: string };
    post({ type: 'reply', id, ...reply });
  } finally {
    // An interrupt that arrived as the command ended must not hit the next one.
    Atomics.store(interruptBuffer, 0, 0);
  }
}

/** Python holds a JavaScript object that only lives in this process: say which one. */
function refuseJsObject(object: unknown): never {
  const kind = object === null ? 'null' : typeof object === 'object' || typeof object === 'function' ? (object.constructor?.name ?? typeof object) : typeof object;
  const detail = typeof object === 'function' ? ` ${object.name || '(anonymous)'}` : '';
  throw new Error(`Python holds a JavaScript ${kind}${detail}, which a snapshot cannot carry; drop the reference (del the variable) to allow swapping`);
}

function snapshot(id: number): void {
  const instance = py!;
  const driver = 'import perennial_kernel\nperennial_kernel._DRIVER';
  const lost = JSON.parse(instance.runPython(`${driver}.prepare_snapshot()`) as string) as Array<{ name: string; reason: string }>;
  const loadedPackages = { ...instance.loadedPackages };
  let memory: Uint8Array;
  try {
    for (const key of Object.keys(instance.loadedPackages)) delete instance.loadedPackages[key];
    memory = instance.makeMemorySnapshot({ serializer: refuseJsObject });
  } finally {
    Object.assign(instance.loadedPackages, loadedPackages);
    instance.runPython(`${driver}.after_snapshot()`);
  }
  const files = archiveFiles(instance.FS, [HOME, '/tmp', instance._api.sitepackages, instance._api.dsodir]);
  const meta = {
    pyodideVersion: instance.version,
    dynlibs: recordDynlibs(instance._module),
    loadedPackages,
    tableLength: instance._module.wasmTable.length,
  };
  post({ type: 'image', id, image: { snapshot: memory, files, meta }, lost }, [memory.buffer as ArrayBuffer, files.buffer as ArrayBuffer]);
}

/** A machine that has been quiet for a second gives its garbage back (its memory is what counts). */
let quiet: NodeJS.Timeout | undefined;
function collectWhenQuiet(): void {
  clearTimeout(quiet);
  quiet = setTimeout(() => (globalThis as { gc?: () => void }).gc?.(), 1000);
  quiet.unref();
}

port.on('message', (message: HostMessage) => {
  collectWhenQuiet();
  void (async () => {
    const id = 'id' in message ? message.id : -1;
    try {
      if (message.type === 'load') await load(message);
      else if (!py) throw new Error('no machine is loaded');
      else if (message.type === 'call') await runCommand(id, message.op, message.args);
      else if (message.type === 'configure') {
        memoryLimit = message.memoryMb * 1024 * 1024;
        await runCommand(id, 'configure', { outputLimit: message.outputLimit, importNames: message.importNames });
      }
      else if (message.type === 'snapshot') snapshot(id);
      else if (message.type === 'loadPackages') {
        const errors: string[] = [];
        await py.loadPackage(message.paths, { messageCallback: () => {}, errorCallback: (m) => errors.push(m) });
        post({ type: 'reply', id, ok: errors.length === 0, ...(errors.length ? { error: errors.join('\n') } : { result: null }) } as ChildMessage);
      }
    } catch (error) {
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      // A Pyodide fatal error leaves the instance unusable: the host restores the machine.
      if (/fatal error/i.test(text) || message.type === 'load') post({ type: 'fatal', error: text.slice(0, 4000) });
      else post({ type: 'reply', id, ok: false, error: text.split('\n')[0]! });
    }
  })();
});
