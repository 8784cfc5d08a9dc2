/**
 * What a sandbox process's machines share besides the process: its one JavaScript realm, which a
 * machine's code reaches through Pyodide's `js` module and `process.getBuiltinModule`. A process
 * serves one machine at a time and then the next (of the same person), so what one machine changed
 * there must not reach the next. Each machine gets a Pyodide instance of its own (its memory, its
 * file system, its JavaScript objects), and between two machines the guard:
 * - clears every timer and closes every message port made through the realm's globals (Pyodide's
 *   own scheduling among them): none of the last machine's callbacks runs later;
 * - gives every finalization callback registered meanwhile nothing more to run;
 * - puts back, as they were when the process's first machine had loaded, the own properties of
 *   `globalThis`, of the objects it names (console, crypto), of the built-in constructors and
 *   their prototypes, of `process`, its listeners and its environment, and of every built-in
 *   module's exports (`require.cache` included), a few levels deep through functions, prototypes
 *   and plain objects: what a machine planted there is gone, and what it replaced is back. Not
 *   the machinery under them (the IPC channel, streams, agents), whose state is Node's own.
 * Work a machine left under way outside the realm (a file or network request) keeps its process
 * from being used again (main.ts). What the guard cannot see: JavaScript a machine left waiting
 * on work Node does not list as pending (a crypto or compression job on the thread pool, a
 * WebAssembly compile), started in its last moments, could still run after the reset; which is
 * why processes are never used again across tenants (`SandboxRuntime.release`).
 */
import { builtinModules, createRequire } from 'node:module';
import { clearImmediate as clearOwnImmediate, clearInterval as clearOwnInterval, clearTimeout as clearOwnTimeout } from 'node:timers';

/** How deep below each root the guard keeps the properties it puts back. */
const DEPTH = 4;
/** Built-in modules not loaded for their exports: deprecated (a warning) or internal. */
const SKIPPED_MODULES = /^(_|sys$|punycode$|test|node:test|node:sea|node:sqlite|sqlite|node:ffi|ffi|wasi$|inspector)/;

type Descriptors = Map<PropertyKey, PropertyDescriptor>;

/** The realm as the process started it, and what was made through it since. */
class RealmGuard {
  readonly #kept = new Map<object, Descriptors>();
  readonly #env: Record<string, string | undefined>;
  /** Timers made through the globals and not yet run or cleared, with how to clear each. */
  readonly #timers = new Map<object, () => void>();
  readonly #ports = new Set<WeakRef<{ close(): void }>>();
  /** Which machine the realm serves: callbacks registered for an earlier one do not run. */
  readonly #now = { generation: 0 };

  constructor() {
    this.#trackTimers();
    this.#trackPorts();
    this.#gateFinalizers();
    const require = createRequire(import.meta.url);
    const roots: object[] = [globalThis];
    for (const name of builtinModules.filter((name) => !SKIPPED_MODULES.test(name))) {
      try {
        roots.push(require(name) as object);
      } catch {
        // Not in this Node build, or refused under the permission model.
      }
    }
    for (const root of roots) this.#keep(root, DEPTH);
    this.#keep(process, 0);
    this.#keep((process as unknown as { _events: object })._events, 1);
    this.#env = { ...process.env };
  }

  /** Ends what the last machine started and puts the realm back as it was; the next machine is a new generation. */
  reset(): void {
    this.#now.generation++;
    for (const clear of this.#timers.values()) clear();
    this.#timers.clear();
    for (const port of this.#ports) port.deref()?.close();
    this.#ports.clear();
    for (const [object, descriptors] of this.#kept) restore(object, descriptors);
    for (const name of Object.keys(process.env)) if (!(name in this.#env)) delete process.env[name];
    for (const [name, value] of Object.entries(this.#env)) if (process.env[name] !== value) process.env[name] = value;
  }

  /** Keeps `object`'s own properties, and `depth` levels of what they hold that is the realm's own make (see the module's comment). */
  #keep(object: object, depth: number): void {
    if (this.#kept.has(object)) return;
    const descriptors: Descriptors = new Map();
    for (const key of Reflect.ownKeys(object)) {
      const descriptor = Reflect.getOwnPropertyDescriptor(object, key);
      if (descriptor) descriptors.set(key, descriptor);
    }
    this.#kept.set(object, descriptors);
    if (depth === 0) return;
    for (const [key, descriptor] of descriptors) {
      const value = descriptor.value as unknown;
      if (typeof value === 'function' || (key === 'prototype' && typeof object === 'function' && isObject(value)) || isPlain(value))
        this.#keep(value as object, depth - 1);
      // What a machine sets on the objects the globals name (console, crypto, performance).
      else if (object === globalThis && isObject(value) && value !== process) this.#keep(value, 0);
    }
  }

  /** Timers made through the globals (a machine's, Pyodide's) are the machine's: cleared at the reset. */
  #trackTimers(): void {
    const live = this.#timers;
    const scope = globalThis as unknown as Record<string, (...args: unknown[]) => unknown>;
    const kinds = [
      { make: 'setTimeout', clear: 'clearTimeout', own: clearOwnTimeout, once: true },
      { make: 'setInterval', clear: 'clearInterval', own: clearOwnInterval, once: false },
      { make: 'setImmediate', clear: 'clearImmediate', own: clearOwnImmediate, once: true },
    ] as const;
    for (const kind of kinds) {
      const make = scope[kind.make]!;
      const clear = scope[kind.clear]!;
      const tracked = function (this: unknown, callback: unknown, ...rest: unknown[]) {
        if (typeof callback !== 'function') return make.call(this, callback, ...rest);
        const handle = make.call(
          this,
          function (this: unknown, ...args: unknown[]) {
            if (kind.once) live.delete(handle);
            return (callback as (...args: unknown[]) => unknown).apply(this, args);
          },
          ...rest,
        ) as object;
        live.set(handle, () => kind.own(handle as never));
        return handle;
      };
      const untracked = function (this: unknown, handle: unknown) {
        if (handle && typeof handle === 'object') live.delete(handle);
        return clear.call(this, handle);
      };
      Object.defineProperty(tracked, 'name', { value: kind.make });
      Object.defineProperty(untracked, 'name', { value: kind.clear });
      scope[kind.make] = Object.assign(tracked, make);
      scope[kind.clear] = untracked;
    }
  }

  /** Message ports made through the globals are closed at the reset: a message posted to one would call back later. */
  #trackPorts(): void {
    const ports = this.#ports;
    const Channel = globalThis.MessageChannel;
    globalThis.MessageChannel = class extends Channel {
      constructor() {
        super();
        ports.add(new WeakRef(this.port1));
        ports.add(new WeakRef(this.port2));
      }
    };
    const Broadcast = globalThis.BroadcastChannel;
    globalThis.BroadcastChannel = class extends Broadcast {
      constructor(name: string) {
        super(name);
        ports.add(new WeakRef(this));
      }
    };
  }

  /** A finalization callback runs only for the machine that registered it (Pyodide's own free a machine's proxies). */
  #gateFinalizers(): void {
    // Node's own modules make registries too, some as the guard loads them.
    const now = this.#now;
    const Registry = globalThis.FinalizationRegistry;
    globalThis.FinalizationRegistry = class<T> extends Registry<T> {
      constructor(cleanup: (held: T) => void) {
        const generation = now.generation;
        super((held) => {
          if (now.generation === generation) cleanup(held);
        });
      }
    };
  }
}

function isObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/** What an object literal makes: a plain object (or one without a prototype), or an array. */
function isPlain(value: unknown): boolean {
  if (!isObject(value)) return false;
  if (Array.isArray(value)) return true;
  const prototype = Reflect.getPrototypeOf(value);
  return prototype === null || prototype === Object.prototype;
}

function restore(object: object, descriptors: Descriptors): void {
  for (const key of Reflect.ownKeys(object)) if (!descriptors.has(key)) Reflect.deleteProperty(object, key);
  for (const [key, descriptor] of descriptors) {
    const now = Reflect.getOwnPropertyDescriptor(object, key);
    if (!now || !sameDescriptor(now, descriptor)) Reflect.defineProperty(object, key, descriptor);
  }
}

function sameDescriptor(a: PropertyDescriptor, b: PropertyDescriptor): boolean {
  return Object.is(a.value, b.value) && a.get === b.get && a.set === b.set && a.writable === b.writable && a.enumerable === b.enumerable;
}

/** Keeps the realm as it is now: call once the process has set itself up, before any machine's code runs. */
export function guardRealm(): RealmGuard {
  return new RealmGuard();
}

export type { RealmGuard };
