/**
 * The Pyodide thread of a sandbox process: boots or restores one machine, runs the kernel's
 * commands, and takes memory snapshots. One worker serves one `load`.
 */
import './harden.ts';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import { applyMemoryPatch, heapOffset, makeMemoryPatch, patchedSnapshot, writePatchedHeap } from '../memory-patch.ts';
import type { BaseFile, ChildMessage, HostMessage, LoadImage, MachineConfig, TakenImage } from '../protocol.ts';
import { blankDeadMemory, memoryLayout, type MemoryAccess, type MemoryLayout } from './dead-memory.ts';
import { proxiedObjects, releaseProxied, trackProxies, type ProxyAccess } from './proxy-references.ts';
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
  _module: EmscriptenModule & MemoryAccess & ProxyAccess & { __hiwire_set(index: number, value: unknown): void };
  _api: { config: Record<string, unknown>; sitepackages: string; dsodir: string };
}
type LoadPyodide = (options: Record<string, unknown>) => Promise<Pyodide>;
/** What `loadPyodide` gets from Emscripten's module factory, before it copies a snapshot in. */
interface CreatedModule {
  HEAPU8: Uint8Array;
  growMemory(bytes: number): number | undefined;
  API: { restoreSnapshot(snapshot: Uint8Array): unknown };
}
type CreateModule = (settings: unknown) => Promise<CreatedModule>;
/** A Python coroutine as JavaScript sees it: awaitable, and to be destroyed after. */
type PyAwaitable = PromiseLike<string> & { destroy(): void };
type DriverCall = ((op: string, args: string) => string | PyAwaitable) & { destroy(): void };

const { pyodideDir, interruptBuffer } = workerData as { pyodideDir: string; interruptBuffer: Int32Array };
const port = parentPort!;
const KERNEL_DIR = '/opt/perennial';
const HOME = '/home/pyodide';

/**
 * Pyodide's lock file with only its unvendored standard library modules. Packages are found and
 * fetched by the host and loaded by path, so Pyodide needs no index of them; and it turns the
 * index it gets into a Python dict at every restore, which would leave new garbage on the heap,
 * and so in the next snapshot, at every swap.
 */
function stdlibLock(): string {
  const lock = JSON.parse(readFileSync(join(pyodideDir, 'pyodide-lock.json'), 'utf8')) as { packages: Record<string, { package_type?: string }> };
  lock.packages = Object.fromEntries(Object.entries(lock.packages).filter(([, entry]) => entry.package_type === 'cpython_module'));
  return JSON.stringify(lock);
}
const BOOT_OPTIONS = { indexURL: pyodideDir + '/', lockFileContents: stdlibLock(), env: { HOME, MPLBACKEND: 'Agg' }, _makeSnapshot: true };
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

/** The initial memory (bytes) the wasm binary's `env.memory` import asks for. */
function importedMemoryMinimum(wasm: Uint8Array): number {
  let at = 8;
  const leb = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = wasm[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  const name = (): string => {
    const length = leb();
    at += length;
    return new TextDecoder().decode(wasm.subarray(at - length, at));
  };
  while (at < wasm.length) {
    const section = wasm[at++]!;
    const size = leb();
    if (section !== 2) {
      at += size;
      continue;
    }
    for (let count = leb(); count > 0; count--) {
      const module = name();
      const field = name();
      const kind = wasm[at++]!;
      if (kind === 0) leb(); // function: type index
      else if (kind === 1) {
        at++; // table: element type, then limits
        if (leb() & 1) leb();
        leb();
      } else if (kind === 2) {
        const flags = leb();
        const minimum = leb();
        if (module === 'env' && field === 'memory') return minimum * 65536;
        if (flags & 1) leb();
      } else if (kind === 3) at += 2; // global: type, mutability
      else if (kind === 4) {
        at++; // tag: attribute, then type index
        leb();
      } else throw new Error(`unknown import kind ${kind}`);
    }
    break;
  }
  throw new Error('pyodide.asm.wasm imports no env.memory');
}

interface BootAhead {
  instance: Promise<Pyodide>;
  supply(memory: MachineMemory | null): void;
}
/** Taken by the worker's one load: once supplied, it holds the snapshot until dropped. */
let ahead: BootAhead | undefined;

/**
 * What does not depend on the machine, done as the worker starts (before its `load` arrives):
 * - pyodide.asm.js is loaded as a plain script. `loadPyodide` would `import()` it, and Node's ESM
 *   loader spends ~150 ms detecting the format of this 1 MB file and scanning it for exports;
 *   with `_createPyodideModule` defined, `loadPyodide` uses it as it is.
 * - The wasm module is compiled, and `loadPyodide`'s instantiation is given the compiled module.
 * - Every module it makes has its proxies followed from the start (see proxy-references.ts).
 * - Pyodide is booted ahead on that module, to wait for the snapshot (`bootAhead`).
 */
const prepared = (async () => {
  createRequire(import.meta.url)(join(pyodideDir, 'pyodide.asm.js'));
  const scope = globalThis as unknown as { _createPyodideModule: CreateModule };
  const create = scope._createPyodideModule;
  scope._createPyodideModule = async (settings) => {
    const module = await create(settings);
    trackProxies(module as unknown as ProxyAccess);
    return module;
  };
  const wasm = readFileSync(join(pyodideDir, 'pyodide.asm.wasm'));
  const compiled = await WebAssembly.compile(wasm);
  const instantiate = WebAssembly.instantiate;
  WebAssembly.instantiate = function (source: unknown, imports?: Record<string, Record<string, unknown>>) {
    const isMain = (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) && source.byteLength === wasm.length;
    if (isMain) return instantiate.call(WebAssembly, compiled, imports).then((instance: unknown) => ({ instance, module: compiled }));
    return (instantiate as (...args: unknown[]) => unknown).apply(WebAssembly, [source, imports]);
  } as typeof WebAssembly.instantiate;
  const { loadPyodide } = (await import(pathToFileURL(join(pyodideDir, 'pyodide.mjs')).href)) as { loadPyodide: LoadPyodide };
  ahead = bootAhead(loadPyodide, importedMemoryMinimum(wasm));
  return loadPyodide;
})();
prepared.catch(() => {});

const PAGE = 4096;

/**
 * Copies `source` into the start of the memory, leaving out pages that are zero in both. A page
 * of wasm memory takes room in the process only once written, and a third of a machine's memory
 * is zero (most of the 5 MiB C stack, the unused heap).
 */
function copyTouchingLess(memory: Uint8Array, source: Uint8Array): void {
  const words = new Uint32Array(source.buffer, source.byteOffset, source.length >>> 2);
  const target = new Uint32Array(memory.buffer, memory.byteOffset, memory.length >>> 2);
  const zero = (array: Uint32Array, from: number, to: number) => {
    for (let i = from; i < to; i++) if (array[i]) return false;
    return true;
  };
  const perPage = PAGE >>> 2;
  for (let from = 0; from < words.length; from += perPage) {
    const to = Math.min(from + perPage, words.length);
    if (!zero(words, from, to)) target.set(words.subarray(from, to), from);
    else if (!zero(target, from, to)) target.fill(0, from, to);
  }
  // A length that is not a multiple of 4 leaves its last bytes.
  const tail = source.length & 3;
  if (tail) memory.set(source.subarray(source.length - tail), source.length - tail);
}

/**
 * A Pyodide instance booted before the snapshot it will hold is known. Instantiating and linking
 * Emscripten's module is most of a restore (~130 of ~170 ms); it is done here on a placeholder
 * snapshot of the smallest memory the module accepts. `supply` then grows the memory to the real
 * snapshot's size and has Pyodide copy it in. `supply(null)` gives the instance up: a cold boot
 * and a restore that replays side modules take the normal path.
 */
function bootAhead(loadPyodide: LoadPyodide, minimumBytes: number): BootAhead {
  let supply!: (memory: MachineMemory | null) => void;
  const supplied = new Promise<MachineMemory | null>((resolve) => (supply = resolve));
  const scope = globalThis as unknown as { _createPyodideModule: CreateModule };
  const create = scope._createPyodideModule;
  scope._createPyodideModule = async (settings) => {
    scope._createPyodideModule = create;
    const module = await create(settings);
    const machine = await supplied;
    if (!machine) throw new Error('the instance booted ahead was not needed');
    const { heapLength } = machine;
    if (heapLength > module.HEAPU8.length && !module.growMemory(heapLength)) throw new Error(`could not grow the memory to the snapshot's ${heapLength} bytes`);
    // Called once, right after this; the machine must not keep the snapshot alive after.
    const restoreSnapshot = module.API.restoreSnapshot;
    module.API.restoreSnapshot = () => {
      module.API.restoreSnapshot = restoreSnapshot;
      // Pyodide takes its state from the header; the heap is written here.
      const state = restoreSnapshot(machine.header);
      machine.writeHeap(module.HEAPU8);
      return state;
    };
    return module;
  };
  const instance = loadPyodide({ ...BOOT_OPTIONS, _loadSnapshot: new Uint8Array(minimumBytes) });
  instance.catch(() => {});
  return { instance, supply };
}

async function load(message: Extract<HostMessage, { type: 'load' }>): Promise<void> {
  const started = performance.now();
  const { config, image } = message;
  const loadPyodide = await prepared;
  const boot = ahead!;
  ahead = undefined;
  const memory = image && memoryOf(image);
  prefetched = undefined;
  if (image && memory && !image.meta.dynlibs.length) {
    boot.supply(memory);
    py = restored(await boot.instance, image);
  } else {
    boot.supply(null);
    await boot.instance.catch(() => {});
    py = image && memory ? await restoreWithDynlibs(loadPyodide, image, memory.whole()) : await bootCold(loadPyodide, message.kernelSource ?? '', config.outputLimit);
  }
  // The cap applies from here: a machine restored with a lower cap than its heap still loads.
  memoryLimit = config.memoryMb * 1024 * 1024;
  connect(py, config);
  // Pyodide keeps the snapshot it booted from alive, and the load message holds the image: tens
  // of MiB. Collect them once this message is handled, rather than carry them in the machine.
  delete py._api.config._loadSnapshot;
  setTimeout(() => (globalThis as { gc?: () => void }).gc?.(), 0);
  post({ type: 'loaded', id: message.id, ms: performance.now() - started });
}

/** A new machine from nothing: a few seconds, done once per version to make the base image. */
async function bootCold(loadPyodide: LoadPyodide, kernelSource: string, outputLimit: number): Promise<Pyodide> {
  const instance = await loadPyodide(BOOT_OPTIONS);
  instance.FS.mkdirTree(KERNEL_DIR);
  instance.FS.writeFile(`${KERNEL_DIR}/perennial_kernel.py`, new TextEncoder().encode(kernelSource));
  instance.runPython(
    `import sys\nsys.path.insert(0, ${JSON.stringify(KERNEL_DIR)})\nimport perennial_kernel\nsys.path.remove(${JSON.stringify(KERNEL_DIR)})\nperennial_kernel.start_emscripten(${outputLimit})`,
  );
  return instance;
}

/** The base this machine was loaded from: its snapshots are patches on it. */
let loadedBase: BaseFile | undefined;

/** A base's memory read ahead, while the worker waited for its machine. */
let prefetched: { path: string; bytes: Uint8Array } | undefined;

function prefetch(base: BaseFile): void {
  try {
    prefetched = { path: base.path, bytes: readFileSync(base.path) };
  } catch {
    // The load reads it again, and says what is wrong.
  }
}

/**
 * A machine's memory as it arrives: its snapshot's header, the length of its heap, how to write
 * the heap into an instance's memory, and the whole snapshot for the paths that need one.
 */
interface MachineMemory {
  header: Uint8Array;
  heapLength: number;
  writeHeap(memory: Uint8Array): void;
  whole(): Uint8Array;
}

/** The memory of an image as loaded: sent whole, or a patch on a base snapshot file. */
function memoryOf(image: LoadImage): MachineMemory {
  if ('snapshot' in image) {
    const snapshot = aligned(image.snapshot);
    const start = heapOffset(snapshot);
    return { header: snapshot.slice(0, start), heapLength: snapshot.length - start, writeHeap: (memory) => copyTouchingLess(memory, snapshot.subarray(start)), whole: () => snapshot };
  }
  const { patch, base: file } = image;
  loadedBase = file;
  const base = prefetched?.path === file.path ? prefetched.bytes : readFileSync(file.path);
  const { length, header } = patchedSnapshot(patch);
  const heapLength = length - header.length;
  return {
    header,
    heapLength,
    // Past the base's heap, a grown memory is zero, as the patch expects.
    writeHeap: (memory) => writePatchedHeap(patch, base, memory.subarray(0, heapLength), copyTouchingLess),
    whole: () => applyMemoryPatch(patch, base),
  };
}

/** A machine with side modules: they are loaded again at their places before the heap is copied in. */
async function restoreWithDynlibs(loadPyodide: LoadPyodide, image: LoadImage, snapshot: Uint8Array): Promise<Pyodide> {
  const instance = await withDynlibReplay(
    image.meta.dynlibs,
    snapshot.subarray(heapOffset(snapshot)),
    image.meta.tableLength,
    (module) => restoreFiles((module as unknown as { FS: EmscriptenFS }).FS, image.files),
    () => loadPyodide({ ...BOOT_OPTIONS, _loadSnapshot: snapshot }),
  );
  return restored(instance, image, false);
}

/** What a restore does once the heap is in: files, the packages Pyodide knows of, the kernel. */
function restored(instance: Pyodide, image: LoadImage, withFiles = true): Pyodide {
  if (withFiles) restoreFiles(instance.FS, image.files);
  Object.assign(instance.loadedPackages, image.meta.loadedPackages);
  instance._module.__hiwire_set(LOADED_PACKAGES_SLOT, instance.loadedPackages);
  releaseProxied(instance._module, image.meta.proxiedObjects ?? []);
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

type Reply = { ok: true; result: unknown } | { ok: false; error: string };

async function runCommand(id: number, op: string, args: Record<string, unknown>): Promise<void> {
  post({ type: 'reply', id, ...(await command(op, args)) });
}

/** A kernel command's reply. */
async function command(op: string, args: Record<string, unknown>): Promise<Reply> {
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
    return JSON.parse(text) as Reply;
  } finally {
    // An interrupt that arrived as the command ended must not hit the next one.
    Atomics.store(interruptBuffer, 0, 0);
  }
}

/**
 * A machine's limits and the names it may auto-install. The kernel keeps the names across swaps,
 * so they cross into Python only when its set is not this one: parsing them at every restore
 * would leave a few hundred new strings on the heap, and in the next snapshot, at every swap.
 */
async function configure(id: number, message: Extract<HostMessage, { type: 'configure' }>): Promise<void> {
  memoryLimit = message.memoryMb * 1024 * 1024;
  const args = { outputLimit: message.outputLimit, importNamesId: message.importNames.id };
  const reply = await command('configure', args);
  const missing = reply.ok && !(reply.result as { importNamesKnown: boolean }).importNamesKnown;
  post({ type: 'reply', id, ...(missing ? await command('configure', { ...args, importNames: message.importNames.names }) : reply) });
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
  let layout: MemoryLayout;
  let proxied: number[];
  try {
    for (const key of Object.keys(instance.loadedPackages)) delete instance.loadedPackages[key];
    memory = instance.makeMemorySnapshot({ serializer: refuseJsObject });
    layout = memoryLayout(instance._module);
    proxied = proxiedObjects();
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
    proxiedObjects: proxied,
  };
  // Only what differs from the base crosses to the host.
  const base = loadedBase && readFileSync(loadedBase.path);
  blankDeadMemory(memory, base, layout);
  const patch = base && makeMemoryPatch(memory, base);
  const image: TakenImage = patch && loadedBase ? { patch, base: loadedBase.id, files, meta } : { snapshot: memory, files, meta };
  post({ type: 'image', id, image, lost }, [(patch ?? memory).buffer as ArrayBuffer, files.buffer as ArrayBuffer]);
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
      else if (message.type === 'prefetch') prefetch(message.base);
      else if (!py) throw new Error('no machine is loaded');
      else if (message.type === 'call') await runCommand(id, message.op, message.args);
      else if (message.type === 'configure') await configure(id, message);
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
