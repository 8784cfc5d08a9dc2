/**
 * How a sandbox process gets its Pyodide machine, one at a time: booted cold (once per version, to
 * make the base image), or restored from a memory snapshot, sent whole or as a patch on a base
 * snapshot.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PhaseClock } from '../../../platform/phase-timings.ts';
import { applyMemoryPatch, applyPatchRuns, heapOffset, patchedSnapshot } from '../memory-patch.ts';
import type { BaseFile, KernelFiles, ArrivedImage } from '../protocol.ts';
import type { MemoryAccess } from './dead-memory.ts';
import { BaseMemory, nonZeroRuns, unionRuns, writeSnapshotHeap, type PageRuns } from './heap-pages.ts';
import { releaseProxied, trackProxies, type ProxyAccess } from './proxy-references.ts';
import { withDynlibReplay, type CreateModule as ReplayCreateModule, type EmscriptenModule } from './dynlibs.ts';
import { restoreFiles, type EmscriptenFS } from './fs-archive.ts';
import type { DeviceFS } from './kernel-device.ts';
import { initialMemoryBytes } from './wasm-memory.ts';

/** The parts of the Pyodide API the sandbox uses. */
export interface Pyodide {
  version: string;
  FS: EmscriptenFS & DeviceFS;
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
/**
 * Pyodide booted with the sandbox's options: cold, or from a memory snapshot; its module made by
 * `create` when given, else by the loader's own factory.
 */
type StartPyodide = (snapshot?: Uint8Array, create?: CreateModule) => Promise<Pyodide>;
/** What `loadPyodide` gets from Emscripten's module factory, before it copies a snapshot in. */
interface CreatedModule extends Pick<MemoryAccess, 'HEAPU32' | '_emscripten_get_sbrk_ptr'> {
  HEAPU8: Uint8Array;
  growMemory(bytes: number): number | undefined;
  API: { restoreSnapshot(snapshot: Uint8Array): unknown };
}
type CreateModule = (settings: unknown) => Promise<CreatedModule>;
/** A Python coroutine as JavaScript sees it: awaitable, and to be destroyed after. */
export type PyAwaitable = PromiseLike<string> & { destroy(): void };
/** The kernel's command entry point, as JavaScript holds it. */
export type DriverCall = ((op: string, args: string) => string | PyAwaitable) & { destroy(): void };

const KERNEL_DIR = '/opt/perennial';
/** The machine's home and default working directory. */
export const HOME = '/home/pyodide';
/** The kernel's driver in a machine, as Python code names it (an expression: an import would bind a name in the user's namespace). */
export const DRIVER = '__import__("perennial_kernel")._DRIVER';

/**
 * Pyodide's lock file with only its unvendored standard library modules. Packages are found and
 * fetched by the host and loaded by path, so Pyodide needs no index of them; and it turns the
 * index it gets into a Python dict at every restore, which would leave new garbage on the heap,
 * and so in the next snapshot, at every swap.
 */
function stdlibLock(pyodideDir: string): string {
  const lock = JSON.parse(readFileSync(join(pyodideDir, 'pyodide-lock.json'), 'utf8')) as { packages: Record<string, { package_type?: string }> };
  lock.packages = Object.fromEntries(Object.entries(lock.packages).filter(([, entry]) => entry.package_type === 'cpython_module'));
  return JSON.stringify(lock);
}
const bootOptions = (pyodideDir: string) => ({
  indexURL: pyodideDir + '/',
  lockFileContents: stdlibLock(pyodideDir),
  env: { HOME, MPLBACKEND: 'Agg' },
  _makeSnapshot: true,
});
/** Slot 6 of Pyodide's hiwire table is `loadedPackages`; a snapshot insists that it equals {}. */
const LOADED_PACKAGES_SLOT = 6;

interface BootAhead {
  instance: Promise<Pyodide>;
  /** Resolved once its module is made: another instance may be started from then on. */
  created: Promise<void>;
  /** Writes a base's heap into the memory now (once `created`): a machine that is a patch on it then only has its patch applied. */
  writeBase(base: BaseMemory): void;
  supply(memory: MachineMemory | null): void;
}

/**
 * What a load is given: the machine's image (none for a cold boot), and the kernel to boot with,
 * or to upgrade the image's to.
 */
export interface LoadRequest {
  image?: ArrivedImage;
  kernel?: KernelFiles;
  outputLimit: number;
  /** Times the load's phases. */
  clock: PhaseClock;
}

/** A machine as loaded, and what its next result should say about the load. */
export interface LoadedMachine {
  instance: Pyodide;
  notices: string[];
}

/** The base image a machine was loaded from, and its memory file. */
export interface LoadedBase {
  id: string;
  memory: BaseMemory;
}

/** Boots or restores a sandbox's machine, one after the other; see `prepare` for what it does before that. */
export class PyodideLoader {
  #ahead?: BootAhead;
  #prefetched?: BaseMemory;
  #base?: LoadedBase;
  #loading = false;

  private constructor(
    private readonly start: StartPyodide,
    private readonly create: CreateModule,
    private readonly memoryMinimum: number,
  ) {
    this.#ahead = bootAhead(start, create, memoryMinimum);
  }

  /**
   * What does not depend on the machine, done as the process starts (before its `load` arrives):
   * - Emscripten's module factory is loaded (`moduleFactory`) and handed to `loadPyodide`.
   * - The wasm module is compiled, and `loadPyodide`'s instantiation is given the compiled module.
   * - Every module it makes has its proxies followed from the start (see proxy-references.ts).
   * - Pyodide is booted ahead on that module, to wait for the snapshot (`bootAhead`).
   * - Once told the base (`prefetch`), a throwaway machine warms the module up (`warmUp`).
   */
  static async prepare(pyodideDir: string): Promise<PyodideLoader> {
    const factory = await moduleFactory(pyodideDir);
    const create: CreateModule = async (settings) => {
      const module = await factory(settings);
      // Emscripten's module is the settings object, and Pyodide's `instantiateWasm` there holds the
      // wasm file it read (8.6 MB) for as long as the machine lives; it has done its one call.
      delete (settings as { instantiateWasm?: unknown }).instantiateWasm;
      stdlibFromDisk((module as unknown as { FS: StdlibFS }).FS, pyodideDir);
      trackProxies(module as unknown as ProxyAccess);
      return module;
    };
    const { compiled, byteLength, memoryMinimum } = await compileMain(pyodideDir);
    const instantiate = WebAssembly.instantiate;
    WebAssembly.instantiate = function (source: unknown, imports?: Record<string, Record<string, unknown>>) {
      const isMain = (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) && source.byteLength === byteLength;
      if (isMain) return instantiate.call(WebAssembly, compiled, imports).then((instance: unknown) => ({ instance, module: compiled }));
      return (instantiate as (...args: unknown[]) => unknown).apply(WebAssembly, [source, imports]);
    } as typeof WebAssembly.instantiate;
    const { loadPyodide } = (await import(pathToFileURL(join(pyodideDir, 'pyodide.mjs')).href)) as { loadPyodide: LoadPyodide };
    const options = bootOptions(pyodideDir);
    const scope = globalThis as unknown as { _createPyodideModule?: CreateModule };
    const start: StartPyodide = (snapshot, made = create) => {
      // Builds up to 0.29 take the factory from this global when they make the module; later ones from the option.
      scope._createPyodideModule = made;
      return loadPyodide({ ...options, createPyodideModule: made, ...(snapshot ? { _loadSnapshot: snapshot } : {}) });
    };
    return new PyodideLoader(start, create, memoryMinimum);
  }

  /** The base the machine was loaded from: its snapshots are patches on it. */
  get base(): LoadedBase | undefined {
    return this.#base;
  }

  /**
   * Finds a base's pages now, while waiting for a machine, and writes its heap into the memory of
   * the instance booted ahead: a machine that is a patch on it then has only its patch applied.
   * Then warms the module up on a throwaway machine restored from it.
   */
  async prefetch(base: BaseFile): Promise<void> {
    if (this.#prefetched || this.#loading) return;
    let bytes: Uint8Array;
    try {
      bytes = readFileSync(base.path);
      this.#prefetched = BaseMemory.of(base.path, bytes);
    } catch {
      // The load reads it again, and says what is wrong.
      return;
    }
    const ahead = this.#ahead;
    const memory = this.#prefetched;
    await ahead?.created
      .then(() => {
        if (!this.#loading) ahead.writeBase(memory);
        return warmUp(this.start, bytes, () => this.#loading);
      })
      .catch(() => {});
  }

  /**
   * The machine was let go: boots the next one's instance ahead, with the base it was a patch on
   * written into its memory as it waits (the compiled module and its warm-up serve every instance).
   */
  again(): void {
    const memory = this.#base?.memory;
    this.#base = undefined;
    this.#loading = false;
    const ahead = bootAhead(this.start, this.create, this.memoryMinimum);
    this.#ahead = ahead;
    if (!memory) return;
    this.#prefetched = memory;
    ahead.created.then(() => !this.#loading && ahead.writeBase(memory)).catch(() => {});
  }

  /** The machine; once per instance, `again` readies the next. */
  async load({ image, kernel, outputLimit, clock }: LoadRequest): Promise<LoadedMachine> {
    const boot = this.#ahead;
    if (!boot) throw new Error('this sandbox has loaded its machine already');
    this.#ahead = undefined;
    this.#loading = true;
    if (image && 'base' in image) {
      const prefetched = this.#prefetched?.path === image.base.path ? this.#prefetched : undefined;
      this.#base = { id: image.base.id, memory: prefetched ?? BaseMemory.of(image.base.path) };
    }
    this.#prefetched = undefined;
    const memory = image && memoryOf(image, this.#base?.memory);
    if (image && memory && !image.meta.dynlibs.length) {
      boot.supply(memory);
      const instance = await boot.instance;
      clock.lap('sandbox: heap written, Pyodide resumed');
      return restored(instance, image, kernel, clock);
    }
    boot.supply(null);
    await boot.instance.catch(() => {});
    if (image && memory) return restoreWithDynlibs(this.start, this.create, image, memory.whole(), kernel, clock);
    if (!kernel) throw new Error('a fresh machine needs the kernel');
    return { instance: await bootCold(this.start, kernel, outputLimit), notices: [] };
  }
}

/**
 * Emscripten's module factory. Pyodide 314 and later ship it as an ES module. Earlier builds ship
 * a plain script that defines it globally, loaded as such: through `import()`, Node's ESM loader
 * would spend ~150 ms detecting the format of the 1 MB file and scanning it for exports.
 */
async function moduleFactory(pyodideDir: string): Promise<CreateModule> {
  const esm = join(pyodideDir, 'pyodide.asm.mjs');
  if (existsSync(esm)) return ((await import(pathToFileURL(esm).href)) as { default: CreateModule }).default;
  createRequire(import.meta.url)(join(pyodideDir, 'pyodide.asm.js'));
  return (globalThis as unknown as { _createPyodideModule: CreateModule })._createPyodideModule;
}

/**
 * Pyodide's main module, compiled, and what is kept of its file: not the bytes (V8 holds its own
 * copy), only what the loader checks later.
 */
async function compileMain(pyodideDir: string): Promise<{ compiled: WebAssembly.Module; byteLength: number; memoryMinimum: number }> {
  const wasm = readFileSync(join(pyodideDir, 'pyodide.asm.wasm'));
  return { compiled: await WebAssembly.compile(wasm), byteLength: wasm.length, memoryMinimum: initialMemoryBytes(wasm) };
}

/** Where Pyodide's folder is mounted (read-only) in a machine's file system, for its standard library. */
const PYODIDE_MOUNT = '/lib/pyodide';

type StdlibFS = Pick<EmscriptenFS, 'readdir' | 'mkdirTree' | 'symlink' | 'unlink'> & {
  mount(type: unknown, options: { root: string }, mountpoint: string): void;
  filesystems: { NODEFS: unknown };
};

/**
 * Pyodide copies its standard library's zip (2.4 MB) into the in-memory file system of every
 * machine, where it stays although Python reads it only to import. A link to the file on disk
 * serves the same bytes, from the page cache every machine shares. Done before Python runs.
 */
function stdlibFromDisk(FS: StdlibFS, pyodideDir: string): void {
  const zip = FS.readdir('/lib').find((name) => /^python\d+\.zip$/.test(name));
  if (!zip) return;
  FS.mkdirTree(PYODIDE_MOUNT);
  FS.mount(FS.filesystems.NODEFS, { root: pyodideDir }, PYODIDE_MOUNT);
  FS.unlink(`/lib/${zip}`);
  FS.symlink(`${PYODIDE_MOUNT}/python_stdlib.zip`, `/lib/${zip}`);
}

/** Pyodide reads the snapshot header as 32-bit words; an IPC copy may not be aligned. */
function aligned(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset % 8 === 0 ? bytes : new Uint8Array(bytes);
}

/**
 * A Pyodide instance booted before the snapshot it will hold is known. Instantiating and linking
 * Emscripten's module is done here, on a placeholder snapshot of the smallest memory the module
 * accepts. `supply` then grows the memory to the real snapshot's size and has Pyodide copy it in.
 * `supply(null)` gives the instance up: a cold boot and a restore that replays side modules take
 * the normal path.
 */
function bootAhead(start: StartPyodide, create: CreateModule, minimumBytes: number): BootAhead {
  let supply!: (memory: MachineMemory | null) => void;
  let madeModule!: () => void;
  const created = new Promise<void>((resolve) => (madeModule = resolve));
  // Let go once taken: the instance's options keep this factory, and so what it holds, for good.
  let supplied: Promise<MachineMemory | null> | undefined = new Promise((resolve) => (supply = resolve));
  let writeBase: (base: BaseMemory) => void = () => {};
  const createAhead: CreateModule = async (settings) => {
    const module = await create(settings);
    // What instantiation wrote (data, the stack, what start-up allocated), all below the break:
    // found now, while the instance waits, rather than during the load.
    const dirty = nonZeroRuns(module.HEAPU8.subarray(0, module.HEAPU32[module._emscripten_get_sbrk_ptr() >>> 2]));
    // The base whose heap the memory holds, written while the instance waited.
    let written: BaseMemory | undefined;
    writeBase = (base) => {
      if (written || supplied === undefined) return;
      if (base.heapLength > module.HEAPU8.length && !module.growMemory(base.heapLength)) return;
      base.writeHeap(module.HEAPU8.subarray(0, base.heapLength), dirty);
      written = base;
    };
    madeModule();
    let machine = await supplied;
    supplied = undefined;
    if (!machine) throw new Error('the instance booted ahead was not needed');
    const { heapLength } = machine;
    if (heapLength > module.HEAPU8.length && !module.growMemory(heapLength)) throw new Error(`could not grow the memory to the snapshot's ${heapLength} bytes`);
    // Called once, right after this.
    const restoreSnapshot = module.API.restoreSnapshot;
    module.API.restoreSnapshot = () => {
      module.API.restoreSnapshot = restoreSnapshot;
      // Pyodide takes its state from the header; the heap is written here.
      const state = restoreSnapshot(machine!.header);
      machine!.writeHeap(module.HEAPU8, dirty, written);
      machine = null;
      return state;
    };
    return module;
  };
  const instance = start(new Uint8Array(minimumBytes), createAhead);
  instance.catch(() => {});
  return { instance, created, supply, writeBase: (base) => writeBase(base) };
}

/**
 * Restores a throwaway machine from the base and runs an instruction in it, so that the machine
 * loaded next does not compile as it goes. V8 compiles a wasm function at its first call, into
 * the module that every instance shares: without this, a restore spent ~80 of its ~150 ms
 * compiling what Pyodide's start and the kernel call. The throwaway is collected after; a load
 * that begins meanwhile has it stop at its next step.
 */
async function warmUp(start: StartPyodide, base: Uint8Array, superseded: () => boolean): Promise<void> {
  if (superseded()) return;
  const instance = await start(aligned(base));
  if (superseded()) return;
  const discard = { write: (buffer: Uint8Array) => buffer.length };
  instance.setStdout(discard);
  instance.setStderr(discard);
  instance.runPython(`${DRIVER}.after_restore()`);
  const call = instance.runPython(`${DRIVER}.call`) as DriverCall;
  call('configure', JSON.stringify({ outputLimit: 1 << 20, importNamesId: '' }));
  const answer = call('run', JSON.stringify({ code: '1', cell: 1 }));
  if (typeof answer !== 'string') await answer;
  if (!superseded()) (globalThis as { gc?: () => void }).gc?.();
}

/** A new machine from nothing: a few seconds, done once per version to make the base image. */
async function bootCold(start: StartPyodide, kernel: KernelFiles, outputLimit: number): Promise<Pyodide> {
  const instance = await start();
  writeKernel(instance, kernel);
  runLoader(instance, 'start', outputLimit);
  return instance;
}

/**
 * Puts the kernel package where the machine imports it from, in place of what an earlier build
 * put there: its modules, or the single module kernels were before they became a package.
 */
function writeKernel(instance: Pyodide, kernel: KernelFiles): void {
  const FS = instance.FS;
  const folder = `${KERNEL_DIR}/perennial_kernel`;
  try {
    FS.unlink(`${KERNEL_DIR}/perennial_kernel.py`);
  } catch {
    // A fresh machine, or one whose kernel is a package already.
  }
  FS.mkdirTree(folder);
  for (const name of FS.readdir(folder)) if (name.endsWith('.py')) FS.unlink(`${folder}/${name}`);
  for (const [name, source] of Object.entries(kernel)) FS.writeFile(`${folder}/${name}`, new TextEncoder().encode(source));
}

/**
 * Calls `action` of the kernel's loader.py with the kernel's folder and `args`. The loader runs
 * from its file, in a scope of its own: before the kernel is imported, beside an earlier build's,
 * and never in a restored machine's `__main__`, which is the user's namespace.
 */
function runLoader(instance: Pyodide, action: 'start' | 'upgrade', ...args: number[]): void {
  const loader = JSON.stringify(`${KERNEL_DIR}/perennial_kernel/loader.py`);
  instance.runPython(`__import__("runpy").run_path(${loader})["${action}"](${[JSON.stringify(KERNEL_DIR), ...args].join(', ')})`);
}

/** Upgrades a restored machine's kernel; when that fails it runs on with its own, and the answer says so. */
function upgradeKernel(instance: Pyodide, kernel: KernelFiles): string[] {
  try {
    writeKernel(instance, kernel);
    runLoader(instance, 'upgrade');
    return [];
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).trim().split('\n').at(-1);
    return [
      `This machine's Perennial kernel, from an earlier version, could not be upgraded (${reason}); it runs on with its own, which may not answer every command (completion, reset).`,
    ];
  }
}

/**
 * A machine's memory as it arrives: its snapshot's header, the length of its heap, how to write
 * the heap into an instance's memory, and the whole snapshot for the paths that need one.
 */
interface MachineMemory {
  header: Uint8Array;
  heapLength: number;
  /**
   * Into an instance's memory, which may not be zero in its `dirty` runs, and holds the heap of
   * base `written` if one was written ahead (zero past it).
   */
  writeHeap(memory: Uint8Array, dirty: PageRuns, written?: BaseMemory): void;
  whole(): Uint8Array;
}

/**
 * Where memory that holds base `written`'s heap ahead, and start-up's `dirty` pages, may not be
 * zero, and clears what of it lies past a heap of `heapLength`: memory the machine's allocator
 * takes to be zero when it grows.
 */
function dirtyWith(memory: Uint8Array, dirty: PageRuns, written: BaseMemory | undefined, heapLength: number): PageRuns {
  if (!written) return dirty;
  if (written.heapLength > heapLength) memory.fill(0, heapLength, written.heapLength);
  return unionRuns(dirty, written.runs);
}

/** The memory of an image as loaded: sent whole, or a patch on the base snapshot file `base`. */
function memoryOf(image: ArrivedImage, base: BaseMemory | undefined): MachineMemory {
  if ('snapshot' in image) {
    const snapshot = aligned(image.snapshot);
    const start = heapOffset(snapshot);
    return {
      header: snapshot.slice(0, start),
      heapLength: snapshot.length - start,
      writeHeap: (memory, dirty, written) => writeSnapshotHeap(memory, snapshot.subarray(start), dirtyWith(memory, dirty, written, snapshot.length - start)),
      whole: () => snapshot,
    };
  }
  const { patch } = image;
  if (!base) throw new Error('a patch needs its base');
  const { length, header } = patchedSnapshot(patch);
  const heapLength = length - header.length;
  return {
    header,
    heapLength,
    writeHeap: (memory, dirty, written) => {
      // Past the base's heap, a grown memory is zero, as the patch expects.
      const heap = memory.subarray(0, heapLength);
      if (written !== base) base.writeHeap(heap, dirtyWith(memory, dirty, written, heapLength));
      applyPatchRuns(patch, heap, base.heapLength);
    },
    whole: () => applyMemoryPatch(patch, base.bytes()),
  };
}

/** A machine with side modules: they are loaded again at their places before the heap is copied in. */
async function restoreWithDynlibs(
  start: StartPyodide,
  create: CreateModule,
  image: ArrivedImage,
  snapshot: Uint8Array,
  kernel: KernelFiles | undefined,
  clock: PhaseClock,
): Promise<LoadedMachine> {
  const instance = await withDynlibReplay(
    image.meta.dynlibs,
    snapshot.subarray(heapOffset(snapshot)),
    image.meta.tableLength,
    (module) => restoreFiles((module as unknown as { FS: EmscriptenFS }).FS, image.files),
    create as unknown as ReplayCreateModule,
    (replay) => start(snapshot, replay as unknown as CreateModule),
  );
  clock.lap('sandbox: side modules and heap loaded, Pyodide resumed');
  return restored(instance, image, kernel, clock, false);
}

/**
 * What a restore does once the heap is in: files, the packages Pyodide knows of, the kernel (and
 * its upgrade to `kernel`, when given).
 */
function restored(instance: Pyodide, image: ArrivedImage, kernel: KernelFiles | undefined, clock: PhaseClock, withFiles = true): LoadedMachine {
  if (withFiles) restoreFiles(instance.FS, image.files);
  Object.assign(instance.loadedPackages, image.meta.loadedPackages);
  instance._module.__hiwire_set(LOADED_PACKAGES_SLOT, instance.loadedPackages);
  releaseProxied(instance._module, image.meta.proxiedObjects ?? []);
  clock.lap('sandbox: files restored');
  instance.runPython(`${DRIVER}.after_restore()`);
  const notices = kernel === undefined ? [] : upgradeKernel(instance, kernel);
  clock.lap('sandbox: kernel resumed');
  return { instance, notices };
}
