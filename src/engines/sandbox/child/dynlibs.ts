/**
 * Snapshots of machines that loaded C-extension packages. A Pyodide memory snapshot holds the
 * linear memory only; each side module (`.so`) also lives outside it — its instance, its slots in
 * the function table, its GOT entries. A restore therefore loads every side module again, in the
 * recorded order, at the recorded memory and table bases, before Pyodide copies the snapshot over
 * the memory. Emscripten (4.0.9, Pyodide 0.29) writes those bases into each library's C
 * `struct dso`, so recording needs no instrumentation.
 */
import type { DynlibRecord } from '../protocol.ts';

/** Offsets into Emscripten's C `struct dso`. */
const DSO = { flags: 4, loaded: 8, memAddr: 12, memSize: 16, tableAddr: 20, tableSize: 24 } as const;
const RTLD_NODELETE = 4096;

/** The part of the Emscripten module the replay uses. */
export interface EmscriptenModule {
  HEAP8: Int8Array;
  HEAPU8: Uint8Array;
  HEAP32: Int32Array;
  HEAPU32: Uint32Array;
  wasmTable: WebAssembly.Table;
  LDSO: { loadedLibsByName: Record<string, { global?: boolean }>; loadedLibsByHandle: Record<number, unknown> };
  FS: { readFile(path: string): Uint8Array };
  loadDynamicLibrary(name: string, flags: { loadAsync: boolean; global: boolean; nodelete: boolean }, localScope: object | null): Promise<unknown>;
}

/** The loaded side modules in load order, with their bases. */
export function recordDynlibs(module: EmscriptenModule): DynlibRecord[] {
  const byHandle = module.LDSO.loadedLibsByHandle;
  const records: DynlibRecord[] = [];
  for (const name of Object.keys(module.LDSO.loadedLibsByName)) {
    if (name === '__main__') continue;
    const dso = module.LDSO.loadedLibsByName[name]!;
    const handles = Object.keys(byHandle)
      .map(Number)
      .filter((h) => h && byHandle[h] === dso);
    const handle = handles.find((h) => module.HEAP8[h + DSO.loaded] === 1);
    if (handle === undefined) {
      throw new Error(`cannot snapshot: the library ${name} was loaded without a handle (as a dependency only), so its place in memory is unknown`);
    }
    records.push({
      name,
      handles,
      flags: module.HEAP32[(handle + DSO.flags) >> 2]!,
      memBase: module.HEAPU32[(handle + DSO.memAddr) >> 2]!,
      memSize: module.HEAP32[(handle + DSO.memSize) >> 2]!,
      tableBase: module.HEAPU32[(handle + DSO.tableAddr) >> 2]!,
      tableSize: module.HEAP32[(handle + DSO.tableSize) >> 2]!,
      global: Boolean(dso.global),
    });
  }
  return records;
}

/**
 * A wasm function that calls `fn` (i32, i32) -> i32. It must be a real wasm function: Emscripten
 * puts every main-module export into the function table.
 */
function wasmFunctionIII(fn: (a: number, b: number) => number): (a: number, b: number) => number {
  const bytes = new Uint8Array([
    0,
    97,
    115,
    109,
    1,
    0,
    0,
    0, // magic, version
    1,
    7,
    1,
    0x60,
    2,
    0x7f,
    0x7f,
    1,
    0x7f, // type (i32, i32) -> i32
    2,
    7,
    1,
    1,
    101,
    1,
    102,
    0,
    0, // import e.f
    7,
    5,
    1,
    1,
    102,
    0,
    0, // export f
  ]);
  const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { e: { f: fn } });
  return instance.exports.f as (a: number, b: number) => number;
}

interface EmscriptenSettings {
  instantiateWasm(
    imports: { env: { __indirect_function_table?: WebAssembly.Table } },
    success: (instance: { exports: Record<string, unknown> }, module: WebAssembly.Module) => void,
  ): unknown;
}

export type CreateModule = (settings: EmscriptenSettings) => Promise<EmscriptenModule>;

/**
 * Steers Emscripten's `getMemory` to chosen addresses. It allocates a side module's memory with
 * `calloc(size + alignment, 1)`; the hook answers the next such call with `forced.addr`.
 */
class CallocSteering {
  forced: { addr: number; size: number; used: boolean } | null = null;
  #slot = -1;
  #real?: (n: number, size: number) => number;
  #table?: WebAssembly.Table;

  /** Wraps `settings.instantiateWasm` so that `calloc` and all its aliases become the hook. */
  install(settings: EmscriptenSettings): void {
    const original = settings.instantiateWasm.bind(settings);
    settings.instantiateWasm = (imports, success) =>
      original(imports, (instance, module) => {
        try {
          success(this.#hook(imports, instance), module);
        } catch (error) {
          // Emscripten gives this callback no way to fail: left to itself the load would wait forever.
          process.nextTick(() => {
            throw error;
          });
        }
      });
  }

  /** The main module's exports with calloc replaced by the hook, which also takes calloc's table slot. */
  #hook(
    imports: { env: { __indirect_function_table?: WebAssembly.Table } },
    instance: { exports: Record<string, unknown> },
  ): { exports: Record<string, unknown> } {
    const real = instance.exports.calloc as (n: number, size: number) => number;
    const hooked = wasmFunctionIII((n, size) => {
      const forced = this.forced;
      if (forced && size === 1 && n >= forced.size && n <= forced.size + 65536) {
        forced.used = true;
        this.forced = null;
        return forced.addr;
      }
      return real(n, size);
    });
    // calloc is address-taken: the hook takes its very slot, or one extra slot would shift
    // every later table base. Pyodide up to 0.29 imports the table; later builds export it.
    const table = imports.env.__indirect_function_table ?? (instance.exports.__indirect_function_table as WebAssembly.Table);
    for (let i = 0; i < table.length; i++) {
      if (table.get(i) === real) {
        this.#slot = i;
        break;
      }
    }
    if (this.#slot >= 0) table.set(this.#slot, hooked);
    this.#real = real;
    this.#table = table;
    const exports: Record<string, unknown> = Object.assign(Object.create(null), instance.exports);
    for (const key of Object.keys(exports)) if (exports[key] === real) exports[key] = hooked;
    return { exports };
  }

  /** Puts the real calloc back into its slot, for C code that calls it through a pointer. */
  uninstall(): void {
    if (this.#slot >= 0 && this.#table && this.#real) this.#table.set(this.#slot, this.#real);
  }
}

/**
 * Runs `load` (which must call `loadPyodide` with `_loadSnapshot` and the factory it is given)
 * with a module factory that wraps `create`: after the runtime is up and before the snapshot is
 * copied in, it restores the files (`prepare`) and loads every recorded side module at its
 * recorded bases.
 */
export async function withDynlibReplay<T>(
  libs: DynlibRecord[],
  heap: Uint8Array,
  tableLength: number,
  prepare: (module: EmscriptenModule) => void,
  create: CreateModule,
  load: (replay: CreateModule) => Promise<T>,
): Promise<T> {
  const steering = new CallocSteering();
  return load(async (settings) => {
    steering.install(settings);
    const module = await create(settings);
    prepare(module);
    // The snapshot's heap already holds the forced regions as allocated chunks, so mallocs made
    // by constructors during the replay cannot land on them.
    module.HEAPU8.set(heap.subarray(0, Math.min(heap.length, module.HEAPU8.length)));
    const table = module.wasmTable;
    for (const lib of libs) {
      if (lib.tableSize) {
        if (table.length > lib.tableBase) throw new Error(`cannot restore ${lib.name}: the function table is already past its base ${lib.tableBase}`);
        table.grow(lib.tableBase - table.length);
      }
      const forced = lib.memSize ? { addr: lib.memBase, size: lib.memSize, used: false } : null;
      steering.forced = forced;
      await module.loadDynamicLibrary(lib.name, { loadAsync: true, global: lib.global, nodelete: Boolean(lib.flags & RTLD_NODELETE) }, lib.global ? null : {});
      steering.forced = null;
      if (forced && !forced.used) throw new Error(`cannot restore ${lib.name}: its memory could not be placed at ${lib.memBase}`);
      // The C side of the snapshot refers to the library by its recorded handles.
      const dso = module.LDSO.loadedLibsByName[lib.name];
      for (const handle of lib.handles) module.LDSO.loadedLibsByHandle[handle] = dso;
    }
    // Slots made after the loads by other means (JS callbacks, ctypes) are not restored: keep
    // them reserved, so that a call traps instead of reaching another function.
    if (table.length < tableLength) table.grow(tableLength - table.length);
    steering.uninstall();
    return module;
  });
}
