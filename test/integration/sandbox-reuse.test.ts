import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openEngines } from '../../src/engines/index.ts';
import { pyodideRuntimes } from '../../src/engines/sandbox/pyodide-runtimes.ts';
import type { MachineManager } from '../../src/machines/machine-manager.ts';
import { openManager, run, tempDataDir, valueOf } from '../helpers/machines.ts';

/**
 * What a machine plants in its sandbox process: in the JavaScript realm its `js` module reaches
 * (globals, a built-in's prototype, a built-in module's exports, Node's module cache, the
 * environment, a listener on the process), timers still to fire, and files. Each line stores
 * 'A' where the next machine of the process would find it.
 */
const PLANT = String.raw`
import js, os
from pyodide.ffi import create_proxy
js.globalThis.planted = "A"
js.Reflect.set(js.Array.prototype, "planted", "A")
js.Reflect.set(js.process.getBuiltinModule("node:fs"), "planted", "A")
js.Reflect.set(js.process.getBuiltinModule("node:module")._cache, "/planted.js", "A")
js.process.env.PLANTED = "A"
js.process.on("message", create_proxy(lambda *message: js.Reflect.set(js.globalThis, "heard", "A")))
js.setTimeout(create_proxy(lambda: js.Reflect.set(js.globalThis, "fired", "A")), 300)
js.setInterval(create_proxy(lambda: js.Reflect.set(js.globalThis, "fired", "A")), 50)
open("/home/pyodide/planted.txt", "w").write("A")
open("/tmp/planted.txt", "w").write("A")
secret = "A's"
"planted"`;

/** What a machine finds of PLANT, once its own timer (later than PLANT's first ones) has fired. */
const LOOK = String.raw`
import asyncio, js, os
await asyncio.sleep(0.5)
found = {
    "global": hasattr(js.globalThis, "planted"),
    "prototype": js.Reflect.has(js.Array.prototype, "planted"),
    "module exports": js.Reflect.has(js.process.getBuiltinModule("node:fs"), "planted"),
    "module cache": js.Reflect.has(js.process.getBuiltinModule("node:module")._cache, "/planted.js"),
    "environment": "PLANTED" in js.Object.keys(js.process.env).to_py(),
    "listener": hasattr(js.globalThis, "heard"),
    "timers": hasattr(js.globalThis, "fired"),
    "files": os.path.exists("/home/pyodide/planted.txt") or os.path.exists("/tmp/planted.txt"),
    "namespace": "secret" in globals(),
}
sorted(name for name, there in found.items() if there)`;

/**
 * A sandbox process is used again: a machine swapped out leaves its process to the next machine
 * (issue 64), which must find nothing of the first: on both Pyodide builds, and never across a
 * team's people.
 */
for (const pyodide of pyodideRuntimes()) {
  describe(`a sandbox process used again, Pyodide ${pyodide.version}`, { timeout: 300_000 }, () => {
    let manager: MachineManager;
    let cleanup: () => Promise<void>;
    const owners = new Map<string, string>();

    before(async () => {
      const data = await tempDataDir();
      cleanup = data.cleanup;
      manager = await openManager({
        dataDir: data.dir,
        engines: openEngines({ dataDir: data.dir, sandboxPyodide: pyodide }),
        tenantOf: async (machine) => owners.get(machine),
      });
      // Machines keep coming, as where processes are used again: the pool fills.
      manager.prewarm();
    });
    after(async () => {
      await manager?.close();
      await cleanup?.();
    });

    const made = async (owner?: string) => {
      const name = (await manager.create({ engine: 'sandbox' })).name;
      if (owner) owners.set(name, owner);
      return name;
    };

    it('gives the next machine a process that holds nothing of the last: realm, timers, files, namespace', async () => {
      const first = await made();
      assert.equal(valueOf((await run(manager, first, PLANT)).result), "'planted'");
      const pid = manager.processId(first);
      await manager.swap(first);

      const next = await made();
      assert.equal(valueOf((await run(manager, next, LOOK)).result), '[]');
      assert.equal(manager.processId(next), pid, 'the next machine runs in the process the first left');
      // The first comes back whole, in a process of its own.
      assert.equal(valueOf((await run(manager, first, 'secret, open("/home/pyodide/planted.txt").read()')).result), `("A's", 'A')`);
      assert.notEqual(manager.processId(first), pid);
    });

    it("never gives one person's machine a process another person's machine held", async () => {
      const alices = await made('alice');
      await run(manager, alices, PLANT);
      const pid = manager.processId(alices);
      await manager.swap(alices);

      const bobs = await made('bob');
      assert.equal(valueOf((await run(manager, bobs, LOOK)).result), '[]');
      assert.notEqual(manager.processId(bobs), pid, "bob's machine runs in a process of its own");
      const alicesNext = await made('alice');
      assert.equal(valueOf((await run(manager, alicesNext, LOOK)).result), '[]');
      assert.equal(manager.processId(alicesNext), pid, "alice's next machine runs in the process her first left");
    });
  });
}
