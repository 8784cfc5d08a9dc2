/**
 * References that JavaScript proxies hold on Python objects. A PyProxy owns one reference to its
 * object; a snapshot keeps that reference on the heap but not the proxy, so after a restore
 * nothing would ever release it. Pyodide's own start makes a few dozen proxies and caches more
 * on them, so every swap leaked those objects, and each one kept its place on the heap in every
 * later snapshot. The sandbox follows the references Pyodide hands to its finalization registry
 * (every proxy's, until it is destroyed or collected), the image records the objects of those
 * still held at the snapshot, and a restore releases one reference to each.
 */

/** What is used of a Pyodide module to follow its proxies' references. */
export interface ProxyAccess {
  finalizationRegistry: FinalizationRegistry<unknown>;
  _Py_DecRef(pointer: number): void;
}

interface Held {
  /** What the reference's release is tied to: a proxy's shared state, or a callable wrapper. */
  target: WeakRef<WeakKey>;
  pointer: number;
}

/**
 * References held now, per module: a process may hold a second instance for a while (see
 * `warmUp` in pyodide-loader.ts), whose references are not the machine's. Each is forgotten when
 * released or when its target is collected.
 */
const heldBy = new WeakMap<ProxyAccess, Set<Held>>();
const byToken = new WeakMap<WeakKey, Held[]>();
const collected = new FinalizationRegistry<{ held: Set<Held>; entry: Held }>(({ held, entry }) => held.delete(entry));

/**
 * Follows the references of `module`'s proxies from now on, before Pyodide makes its first.
 * Pyodide registers each one with the object's address (as `{ ptr }` for proxies, `[ptr, ...]`
 * for its one-shot callables and iterators) and unregisters it when it releases the reference.
 */
export function trackProxies(module: ProxyAccess): void {
  const held = new Set<Held>();
  heldBy.set(module, held);
  const registry = module.finalizationRegistry;
  const register = registry.register.bind(registry);
  const unregister = registry.unregister.bind(registry);
  registry.register = (target: WeakKey, value: unknown, token?: WeakKey) => {
    const pointer = Array.isArray(value) ? value[0] : (value as { ptr?: unknown } | null)?.ptr;
    if (typeof pointer === 'number' && pointer) {
      const entry = { target: new WeakRef(target), pointer };
      held.add(entry);
      collected.register(target, { held, entry });
      if (token) byToken.set(token, [...(byToken.get(token) ?? []), entry]);
    }
    register(target, value, token);
  };
  registry.unregister = (token: WeakKey) => {
    for (const entry of byToken.get(token) ?? []) held.delete(entry);
    byToken.delete(token);
    return unregister(token);
  };
}

/**
 * The addresses of the objects whose references `module`'s proxies hold now, one per reference.
 * A reference whose target is already collected but whose release may not have run yet is left
 * out: leaving one in the heap is harmless, releasing one twice would not be.
 */
export function proxiedObjects(module: ProxyAccess): number[] {
  return [...(heldBy.get(module) ?? [])].filter((entry) => entry.target.deref() !== undefined).map((entry) => entry.pointer);
}

/** Once a snapshot is restored: the references its process's proxies held are nobody's now. */
export function releaseProxied(module: ProxyAccess, pointers: readonly number[]): void {
  for (const pointer of pointers) module._Py_DecRef(pointer);
}
