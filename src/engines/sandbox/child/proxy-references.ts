/**
 * References that JavaScript proxies hold on Python objects. A PyProxy owns one reference to its
 * object; a snapshot keeps that reference on the heap but not the proxy, so after a restore
 * nothing would ever release it. Pyodide's own start makes a few dozen proxies and caches more
 * on them, so every swap leaked those objects, and each one kept its place on the heap in every
 * later snapshot. The worker follows every proxy Pyodide makes (weakly), the image records the
 * objects of the ones alive at the snapshot, and a restore releases one reference to each.
 */

interface ProxyShared {
  /** The object's address; 0 once the proxy is destroyed. */
  ptr: number;
}

/** What is used of a Pyodide module to follow its proxies. */
export interface ProxyAccess {
  pyproxy_alloc_map: Map<object, unknown>;
  enable_pyproxy_allocation_tracing(): void;
  PyProxy_getAttrsQuiet(proxy: object): { shared: ProxyShared };
  _Py_DecRef(pointer: number): void;
}

/** Proxies that are alive or not yet collected. */
const proxies = new Set<WeakRef<object>>();
const refOf = new WeakMap<object, WeakRef<object>>();
const collected = new FinalizationRegistry<WeakRef<object>>((ref) => proxies.delete(ref));

/**
 * Follows the proxies of `module` from now on, before Pyodide makes its first. Pyodide's
 * allocation tracing reports each new proxy to `pyproxy_alloc_map` and each destroyed one; its
 * map would keep them all alive, so its `set` and `delete` are given weak ones instead.
 */
export function trackProxies(module: ProxyAccess): void {
  const traced = module.pyproxy_alloc_map;
  traced.set = (proxy: object) => {
    const ref = new WeakRef(proxy);
    proxies.add(ref);
    refOf.set(proxy, ref);
    collected.register(proxy, ref, ref);
    return traced;
  };
  traced.delete = (proxy: object) => {
    const ref = refOf.get(proxy);
    if (!ref) return false;
    proxies.delete(ref);
    collected.unregister(ref);
    return true;
  };
  module.enable_pyproxy_allocation_tracing();
}

/** The addresses of the objects that live proxies hold, one per reference. */
export function proxiedObjects(module: ProxyAccess): number[] {
  const seen = new Set<ProxyShared>();
  const pointers: number[] = [];
  for (const ref of proxies) {
    const proxy = ref.deref();
    // Copies of a proxy share its reference, and a destroyed one holds none.
    const shared = proxy && module.PyProxy_getAttrsQuiet(proxy).shared;
    if (!shared?.ptr || seen.has(shared)) continue;
    seen.add(shared);
    pointers.push(shared.ptr);
  }
  return pointers;
}

/** Once a snapshot is restored: the references its process's proxies held are nobody's now. */
export function releaseProxied(module: ProxyAccess, pointers: readonly number[]): void {
  for (const pointer of pointers) module._Py_DecRef(pointer);
}
