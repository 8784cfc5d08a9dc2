import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { MachineManager } from '../../src/machines/machine-manager.ts';
import { readImageHeaderFile } from '../../src/engines/sandbox/machine-image-file.ts';
import { detectIsolation } from '../../src/engines/sandbox/isolation.ts';
import { CURRENT_PYODIDE } from '../../src/engines/sandbox/pyodide-runtimes.ts';
import { sandboxChildDir } from '../../src/engines/sandbox/sandbox-assets.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { errorOf, eventually, managerFixture, openManager, run, tempDataDir, valueOf } from '../helpers/machines.ts';

/** The sandbox processes this test process started (its descendants running the sandbox's main.js). */
function sandboxProcesses(): number[] {
  const found: number[] = [];
  const visit = (pid: number) => {
    let children: number[];
    try {
      children = readdirSync(`/proc/${pid}/task`).flatMap((task) =>
        readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
      );
    } catch {
      return; // gone meanwhile
    }
    for (const child of children) {
      try {
        if (readFileSync(`/proc/${child}/cmdline`, 'utf8').includes('sandbox/main.js')) found.push(child);
      } catch {
        continue; // gone meanwhile
      }
      visit(child);
    }
  };
  visit(process.pid);
  return found;
}

/**
 * A real Emscripten side module, assembled by hand: a `dylink.0` section asking for 16 bytes of
 * memory, and `bump()`, which increments a counter at its memory base and returns it. Loading it
 * with ctypes goes through Emscripten's dlopen, exactly as a C-extension package does.
 */
function bumpSideModule(): Buffer {
  const section = (id: number, body: number[]) => [id, body.length, ...body];
  const name = (text: string) => [text.length, ...Buffer.from(text)];
  const memInfo = [1, 4, 16, 2, 0, 0]; // WASM_DYLINK_MEM_INFO: size 16, align 2^2, no table
  const body = [0, 0x23, 0, 0x23, 0, 0x28, 2, 0, 0x41, 1, 0x6a, 0x36, 2, 0, 0x23, 0, 0x28, 2, 0, 0x0b];
  return Buffer.from([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(0, [...name('dylink.0'), ...memInfo]),
    ...section(1, [1, 0x60, 0, 1, 0x7f]),
    ...section(2, [2, ...name('env'), ...name('memory'), 2, 0, 0, ...name('env'), ...name('__memory_base'), 3, 0x7f, 0]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('bump'), 0, 0]),
    ...section(10, [1, body.length, ...body]),
  ]);
}

describe('sandbox engine', { timeout: 480_000 }, () => {
  const fixture = managerFixture({ saveDelayMs: 60_000 });
  let manager: MachineManager;

  before(() => {
    manager = fixture.manager;
  });

  it('is the default engine, and says how it is isolated', async () => {
    assert.equal(manager.defaultEngine, 'sandbox');
    const status = manager.engineStatus().find((e) => e.name === 'sandbox')!;
    assert.equal(status.available, true);
    assert.match(
      status.detail,
      /^Pyodide 314\.0\.7 \(Python 3\.14\.2\), bubblewrap \+ Node permission model; machines made on Pyodide 0\.29\.0 stay on it until upgraded$/,
    );
  });

  it('keeps no process ready for one machine, fills its pool from the second machine made or swapped in, and empties it when idle', async () => {
    const { dir, cleanup } = await tempDataDir();
    // Long enough for the pool to fill before it is emptied, on a loaded machine too (10 s was not).
    const server = await LocalServer.start({ dataDir: dir, poolIdleSeconds: 30 });
    const own = server.manager;
    const ready = () => own.engineStatus().find((e) => e.name === 'sandbox')!.ready;
    try {
      assert.equal(ready(), 0);
      assert.deepEqual(sandboxProcesses(), [], 'a server that has run no sandbox machine runs no sandbox');
      const first = (await own.create()).name;
      assert.equal(valueOf((await run(own, first, '6 * 7')).result), '42');
      // Its swap-in is the second time a machine was loaded: that makes the pool fill.
      await own.swap(first);
      assert.equal(valueOf((await run(own, first, '6 * 7')).result), '42', 'a swap-in without a ready process');
      await eventually(() => ready() === 1, 60_000, 'the pool to fill after the second machine made or swapped in');
      const second = (await own.create()).name;
      assert.equal(valueOf((await run(own, second, '1 + 1')).result), '2');
      await own.swap(first);
      await own.swap(second);
      await eventually(() => ready() === 0 && sandboxProcesses().length === 0, 120_000, 'the pool to empty once idle');
      assert.equal(valueOf((await run(own, first, '6 * 7')).result), '42', 'a machine still swaps in, from a new process');
    } finally {
      await server.close();
      await cleanup();
    }
  });

  it('restores exactly: a generator half-way, closures, instances, random state, files written by the code', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    await run(
      manager,
      name,
      [
        'import random, os',
        'random.seed(7)',
        'def counter():\n    n = 0\n    while True:\n        n += 1\n        yield n',
        'gen = counter()',
        '[next(gen) for _ in range(3)]',
        'def make(k):\n    return lambda v: v * k',
        'triple = make(3)',
        'class Account:\n    def __init__(self):\n        self.balance = 10',
        'acct = Account(); acct.balance += 5',
        'open(os.path.expanduser("~/notes.txt"), "w").write("home file")',
        'open("/tmp/scratch.txt", "w").write("tmp file")',
      ].join('\n'),
    );
    const expectedRandom = valueOf(
      (await run(manager, (await manager.create({ engine: 'sandbox' })).name, 'import random\nrandom.seed(7)\nrandom.random()')).result,
    );
    await manager.swap(name);
    assert.equal(manager.get(name).state, 'swapped');
    const r = await run(
      manager,
      name,
      'next(gen), triple(5), acct.balance, open(os.path.expanduser("~/notes.txt")).read(), open("/tmp/scratch.txt").read(), random.random()',
    );
    assert.equal(valueOf(r.result), `(4, 15, 15, 'home file', 'tmp file', ${expectedRandom})`);
    assert.equal(r.result.data, null);
  });

  it('keeps a heap larger than the initial one, small on disk thanks to the delta', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    await run(manager, name, 'big = list(range(2_600_000))');
    await manager.swap(name);
    const bytes = manager.get(name).snapshot!.bytes;
    assert.equal(valueOf((await run(manager, name, 'len(big), big[-1], sum(big[:10])')).result), '(2600000, 2599999, 45)');
    const trivial = (await manager.create({ engine: 'sandbox' })).name;
    await run(manager, trivial, 'x = 1');
    await manager.swap(trivial);
    assert.ok(manager.get(trivial).snapshot!.bytes < 300_000, `trivial machine takes ${manager.get(trivial).snapshot!.bytes} bytes`);
    assert.ok(bytes > manager.get(trivial).snapshot!.bytes);
  });

  it('stores memory that does not compress raw, which its sandbox reads from the image file lent to it for the load alone', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    await run(manager, name, 'import hashlib, os\nnoise = os.urandom(6 << 20)\ndigest = hashlib.sha256(noise).hexdigest()');
    await manager.swap(name);
    const header = await readImageHeaderFile(join(manager.dataDir, 'machines', name, 'snapshot'));
    const raw = header.memoryChunks!.filter((chunk) => chunk.codec === 'raw');
    assert.ok(raw.length >= 5, `${raw.length} chunks of 1 MiB stored raw`);
    assert.equal(valueOf((await run(manager, name, 'hashlib.sha256(noise).hexdigest() == digest, len(noise)')).result), '(True, 6291456)');
    const mailboxes = join(manager.dataDir, 'engines', 'sandbox', CURRENT_PYODIDE.cacheFolder, 'mailboxes');
    const lent = readdirSync(mailboxes).filter((mailbox) => readdirSync(join(mailboxes, mailbox)).includes('image'));
    assert.deepEqual(lent, [], 'the image file is taken back once the machine is loaded');
    await manager.swap(name);
    assert.equal(valueOf((await run(manager, name, 'hashlib.sha256(noise).hexdigest() == digest')).result), 'True');
  });

  it('leaves nothing behind at a swap: no object kept alive by the process before, sys.path as it was', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    await run(manager, name, 'import gc, sys');
    const measure = async () => {
      const [objects, path] = JSON.parse(
        valueOf((await run(manager, name, 'import json\ngc.collect()\njson.dumps([len(gc.get_objects()), sys.path])')).result)!.slice(1, -1),
      ) as [number, string[]];
      return { objects, path };
    };
    // Each cell is kept for tracebacks, so the count grows by the same amount per cell.
    const first = await measure();
    const second = await measure();
    const perCell = second.objects - first.objects;
    const after: Array<{ objects: number; path: string[] }> = [];
    for (let cycle = 0; cycle < 4; cycle++) {
      await manager.swap(name);
      after.push(await measure());
    }
    // The first restore may fill caches (isinstance caches of ABCs); from then on, a swap adds nothing.
    assert.deepEqual(
      after.slice(1).map((m, i) => m.objects - after[i]!.objects),
      [perCell, perCell, perCell],
    );
    for (const m of after) assert.deepEqual(m.path, first.path);
  });

  it('stays warm, and says why, while Python holds a JavaScript object; swaps once it is dropped', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    await run(manager, name, 'import js\nholder = js.Object.new()\nkept = 42');
    await assert.rejects(manager.swap(name), /Python holds a JavaScript Object/);
    const info = manager.get(name);
    assert.equal(info.state, 'warm');
    assert.match(info.warnings.join('\n'), /cannot be swapped out, so it stays in memory: .*Python holds a JavaScript Object/);
    assert.equal(valueOf((await run(manager, name, 'kept')).result), '42');
    await run(manager, name, 'del holder');
    await manager.swap(name);
    assert.deepEqual(manager.get(name).warnings, []);
    assert.equal(valueOf((await run(manager, name, 'kept')).result), '42');
    // Garbage in a cycle still holds one until Python collects it, which the snapshot has it do.
    await run(manager, name, 'import gc\ngc.disable()\nclass Box: pass\nbox = Box()\nbox.me = box\nbox.js = js.Object.new()\ndel box');
    await manager.swap(name);
    assert.equal(valueOf((await run(manager, name, 'kept')).result), '42');
  });

  it('replays C-extension side modules at their recorded bases, so they work after a swap', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    const load = `import ctypes\nlib = ctypes.CDLL("/home/pyodide/libbump.so")\nbump = lib.bump\nbump.restype = ctypes.c_int`;
    await run(manager, name, `import base64\nopen("/home/pyodide/libbump.so", "wb").write(base64.b64decode("${bumpSideModule().toString('base64')}"))`);
    assert.equal(valueOf((await run(manager, name, `${load}\n[bump(), bump(), bump()]`)).result), '[1, 2, 3]');
    for (let cycle = 0; cycle < 2; cycle++) {
      await manager.swap(name);
      // A new lookup, as an import after the restore would do: the library's code and its
      // memory must both be where the restored heap expects them.
      assert.equal(valueOf((await run(manager, name, `${load}\nbump()`)).result), String(4 + cycle));
    }
  });

  it('refuses a snapshot made by another Pyodide version, and leaves it untouched', async () => {
    const name = (await manager.create({ engine: 'sandbox' })).name;
    await run(manager, name, 'kept = 1');
    await manager.swap(name);
    const path = join(manager.dataDir, 'machines', name, 'snapshot');
    const original = await readFile(path);
    // A build this Perennial does not ship, named in as many characters (the header's length is stored).
    const forged = Buffer.from(original.toString('latin1').replace('"pyodideVersion":"314.0.7"', '"pyodideVersion":"314.0.9"'), 'latin1');
    await writeFile(path, forged);
    const r = await run(manager, name, 'kept');
    assert.match(errorOf(r.result), /snapshot was made by Pyodide 314\.0\.9, which this Perennial does not ship \(it runs Pyodide 314\.0\.7 and 0\.29\.0\)/);
    assert.deepEqual(await readFile(path), forged, 'the snapshot is kept as it was');
    await writeFile(path, original);
    assert.equal(valueOf((await run(manager, name, 'kept')).result), '1');
  });

  it('writes the base memory file again when it is damaged or missing, and machines still restore', async () => {
    const data = await tempDataDir();
    try {
      let other = await openManager({ dataDir: data.dir });
      const name = (await other.create({ engine: 'sandbox' })).name;
      await run(other, name, 'kept = 41');
      await other.swap(name);
      await other.close();
      const memoryDir = join(data.dir, 'engines', 'sandbox', CURRENT_PYODIDE.cacheFolder, 'memory');
      const [file] = await readdir(memoryDir);
      const path = join(memoryDir, file!);
      const good = await readFile(path);
      const damaged = Buffer.from(good);
      damaged[damaged.length >> 1]! ^= 0xff;
      await writeFile(path, damaged);
      other = await openManager({ dataDir: data.dir });
      assert.equal(valueOf((await run(other, name, 'kept + 1')).result), '42');
      assert.ok((await readFile(path)).equals(good), 'the damaged file was written again');
      await other.swap(name);
      await other.close();
      await rm(path);
      other = await openManager({ dataDir: data.dir });
      assert.equal(valueOf((await run(other, name, 'kept + 2')).result), '43');
      assert.ok((await readFile(path)).equals(good), 'the missing file was written again');
      await other.close();
    } finally {
      await data.cleanup();
    }
  });

  it("starts a fresh data dir's first machine from the base image the build ships, not from a cold boot", async () => {
    // Not seeded with the tests' own base, which an earlier build of the base may have made.
    const data = await tempDataDir({ empty: true });
    try {
      const other = await openManager({ dataDir: data.dir });
      const name = (await other.create({ engine: 'sandbox' })).name;
      assert.equal(valueOf((await run(other, name, '6 * 7')).result), '42');
      await other.close();
      const cache = join(data.dir, 'engines', 'sandbox', CURRENT_PYODIDE.cacheFolder);
      const [made] = (await readdir(cache)).filter((file) => /^base-\w+\.image$/.test(file));
      const shipped = join(sandboxChildDir(), `base-${CURRENT_PYODIDE.version}-${made!.slice('base-'.length)}`);
      // A cold boot makes different bytes every time (hash seeds, timestamps): these are the build's.
      assert.ok((await readFile(join(cache, made!))).equals(await readFile(shipped)), 'the base in the data dir is the one the build ships');
    } finally {
      await data.cleanup();
    }
  });

  describe('workspace and network', () => {
    let workspace: string;
    let listener: Server;
    const requests: string[] = [];

    before(async () => {
      workspace = await mkdtemp(join(tmpdir(), 'perennial-workspace-'));
      await writeFile(join(workspace, 'data.csv'), 'a,b\n1,2\n');
      listener = createServer((socket) => {
        socket.on('data', (d) => {
          requests.push(d.toString().split('\r\n')[0]!);
          socket.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok');
        });
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      listener.close();
      await rm(workspace, { recursive: true, force: true });
    });

    it('mounts a host folder read-only at /workspace, the working directory, across swaps', async () => {
      const name = (await manager.create({ engine: 'sandbox', workspace })).name;
      assert.equal(valueOf((await run(manager, name, 'import os\nos.getcwd(), open("data.csv").read()')).result), "('/workspace', 'a,b\\n1,2\\n')");
      assert.match(errorOf((await run(manager, name, 'open("/workspace/out.txt", "w").write("x")')).result), /OSError|PermissionError|Errno/);
      await manager.swap(name);
      assert.equal(valueOf((await run(manager, name, 'open("data.csv").read().count(",")')).result), '2');
    });

    it('mounts it read-write when asked, and the host sees the writes', async () => {
      const name = (await manager.create({ engine: 'sandbox', workspace, workspaceWritable: true })).name;
      await run(manager, name, 'open("result.txt", "w").write("written in the sandbox")');
      assert.equal(await readFile(join(workspace, 'result.txt'), 'utf8'), 'written in the sandbox');
    });

    it("works in a folder that holds Pyodide's install and the sandbox's own code (a checkout, a home folder), which stay read-only", async () => {
      const checkout = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
      const name = (await manager.create({ engine: 'sandbox', workdir: checkout })).name;
      assert.equal(
        valueOf((await run(manager, name, 'import json, os\nos.getcwd(), json.load(open("package.json"))["name"]')).result),
        `('${checkout}', 'perennial-repl')`,
      );
      if (!detectIsolation().bubblewrap) return; // Node's permission model grants a folder with all it holds
      const stray = join(checkout, 'node_modules', 'pyodide', 'written-by-a-machine');
      try {
        assert.match(errorOf((await run(manager, name, `open(${JSON.stringify(stray)}, 'w').write('x')`)).result), /OSError|Read-only|Errno/);
      } finally {
        await rm(stray, { force: true });
      }
    });

    it('reaches the network only when the machine was created with it allowed', async () => {
      const port = (listener.address() as { port: number }).port;
      const fetch = `from pyodide.http import pyfetch\nr = await pyfetch("http://127.0.0.1:${port}/hello")\nawait r.string()`;
      const closed = (await manager.create({ engine: 'sandbox' })).name;
      assert.ok('error' in (await run(manager, closed, fetch, { timeoutSeconds: 10 })).result);
      assert.deepEqual(requests, []);
      const open = (await manager.create({ engine: 'sandbox', network: true })).name;
      assert.equal(valueOf((await run(manager, open, fetch, { timeoutSeconds: 10 })).result), "'ok'");
      assert.deepEqual(requests, ['GET /hello HTTP/1.1']);
    });
  });
});
