import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { access, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, afterEach, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DataDirLockedError } from '../../src/platform/data-dir-lock.ts';
import { VERSION } from '../../src/shared/version.ts';
import { MachineGoneError, type MachineManager } from '../../src/machines/machine-manager.ts';
import { MachineStore } from '../../src/machines/machine-store.ts';
import {
  ENGINES_UNDER_TEST,
  TEST_PYTHON,
  errorOf,
  eventually,
  machineOptions,
  managerFixture,
  openManager,
  run,
  tempDataDir,
  valueOf,
} from '../helpers/machines.ts';

/** Defines state of every kind a REPL user builds up; `STATE_CHECK` reads it all back. */
const STATE_SETUP = `
import math, json
import collections as col
from functools import partial
from dataclasses import dataclass, field, asdict
import random
random.seed(1234)

counter = 41
words = ["alpha", "beta"]
shared = {"k": [1, 2]}
alias = shared
def scale(v, factor=2):
    return v * factor * math.e / math.e
def make_adder(n):
    def add(v):
        return v + n
    return add
add5 = make_adder(5)
square = lambda v: v * v
class Point:
    origin = None
    def __init__(self, x, y):
        self.x, self.y = x, y
    def norm(self):
        return math.hypot(self.x, self.y)
    @property
    def flipped(self):
        return Point(self.y, self.x)
    @staticmethod
    def unit():
        return Point(1, 0)
    def __repr__(self):
        return f"Point({self.x}, {self.y})"
class Point3(Point):
    def __init__(self, x, y, z):
        super().__init__(x, y)
        self.z = z
@dataclass
class Item:
    name: str
    tags: list = field(default_factory=list)
p = Point(3, 4)
p3 = Point3(1, 2, 3)
item = Item("pen", ["blue"])
double = partial(scale, factor=2)
histogram = col.Counter("mississippi")
"setup"`;

const STATE_CHECK = `(counter + 1, words, alias is shared, scale(3), add5(1), square(4), p.norm(), p.flipped,
 Point.unit(), p3.norm() > 2, p3.z, isinstance(p3, Point), asdict(item), Item("x").tags, double(10),
 histogram.most_common(1), json.dumps({"a": 1}), col.OrderedDict(a=1)["a"], _)`;
const STATE_EXPECTED = `(42, ['alpha', 'beta'], True, 6.0, 6, 16, 5.0, Point(4, 3), Point(1, 0), True, 3, True, {'name': 'pen', 'tags': ['blue']}, [], 20.0, [('i', 4)], '{"a": 1}', 1, 'setup')`;

const HOST = fileURLToPath(new URL('../helpers/manager-host.ts', import.meta.url));

for (const engine of ENGINES_UNDER_TEST) {
  describe(`persistence on the ${engine} engine`, { timeout: 360_000 }, () => {
    let dataDir: string;
    let cleanup: () => Promise<void>;
    let manager: MachineManager | undefined;

    before(async () => {
      ({ dir: dataDir, cleanup } = await tempDataDir());
    });
    afterEach(async () => {
      await manager?.close();
      manager = undefined;
    });
    after(() => cleanup());

    it('keeps variables, functions, closures, classes, instances and imports across a forced swap', async () => {
      manager = await openManager({ dataDir });
      const name = (await manager.create(machineOptions(engine))).name;
      assert.equal(valueOf((await run(manager, name, STATE_SETUP)).result), "'setup'");
      await manager.swap(name);
      assert.equal(manager.get(name).state, 'swapped');
      assert.ok(manager.get(name).snapshot!.bytes > 0);
      const r = await run(manager, name, STATE_CHECK);
      assert.equal(valueOf(r.result), STATE_EXPECTED);
      assert.equal(r.result.data?.lost, undefined, 'nothing was lost');
      assert.equal(r.result.data?.notices, undefined);
      assert.equal(manager.get(name).state, 'warm');
      // The random generator continues where it was, as if no swap had happened.
      const fresh = (await manager.create(machineOptions(engine))).name;
      const expected = valueOf((await run(manager, fresh, 'import random\nrandom.seed(1234)\nrandom.random()')).result);
      assert.equal(valueOf((await run(manager, name, 'random.random()')).result), expected);
      // Repeated cycles keep working.
      for (let cycle = 0; cycle < 3; cycle++) {
        await run(manager, name, `counter += 1`);
        await manager.swap(name);
      }
      assert.equal(valueOf((await run(manager, name, 'counter, add5(counter)')).result), '(44, 49)');
    });

    it("a library's warning shown once per place is not shown again after a swap, nor when IPython is made after it", async () => {
      manager = await openManager({ dataDir });
      const name = (await manager.create(machineOptions(engine))).name;
      const library = 'open("k_lib.py", "w").write("import warnings\\ndef warn():\\n    warnings.warn(\'k-once\')\\n")\nimport k_lib';
      // matplotlib too: saving its settings must not change the warnings filters (which makes Python forget).
      valueOf((await run(manager, name, engine === 'python' ? `import matplotlib\n${library}` : library)).result);
      assert.match((await run(manager, name, 'k_lib.warn()')).stderr, /UserWarning: k-once/);
      assert.equal((await run(manager, name, 'k_lib.warn()')).stderr, '', 'once per place, as without a swap');
      await manager.swap(name);
      // A value IPython shows (a long list) makes its shell on the python engine, which adds warnings filters.
      await run(manager, name, 'list(range(100))');
      assert.equal((await run(manager, name, 'k_lib.warn()')).stderr, '');
      // Once a cell changes the filters, Python shows it again: so does a machine after a swap.
      valueOf((await run(manager, name, 'import warnings\nwarnings.filterwarnings("ignore", message="unrelated")')).result);
      await manager.swap(name);
      assert.match((await run(manager, name, 'k_lib.warn()')).stderr, /UserWarning: k-once/);
    });

    it('brings back a machine whose variables fill most of its memory cap', { skip: engine !== 'python' && 'a sandbox swap is its exact memory' }, async () => {
      manager = await openManager({ dataDir });
      const name = (await manager.create({ ...machineOptions(engine), memoryMb: 400 })).name;
      valueOf((await run(manager, name, 'k_big = bytearray(230 * 2**20)\nk_big[-1] = 7')).result);
      await manager.swap(name);
      const back = await run(manager, name, '(len(k_big) >> 20, k_big[-1])');
      assert.equal(valueOf(back.result), '(230, 7)');
      assert.equal(back.result.data?.lost, undefined);
    });

    it('brings every machine back after a restart, with its seq, history and results', async () => {
      manager = await openManager({ dataDir });
      const name = (await manager.create(machineOptions(engine, { tags: { project: 'restart' } }))).name;
      await run(manager, name, STATE_SETUP);
      const last = await run(manager, name, 'print("hi")\ncounter');
      await manager.close();
      manager = await openManager({ dataDir });
      const info = manager.list({ project: 'restart' })[0]!;
      assert.equal(info.name, name);
      assert.equal(info.state, 'swapped');
      assert.equal(info.nextSeq, last.seq + 1);
      assert.deepEqual(await manager.result(name, last.seq), last.result);
      const history = await manager.history(name, 1);
      assert.deepEqual(
        history.map((h) => [h.seq, h.code, h.stdout]),
        [[last.seq, 'print("hi")\ncounter', 'hi']],
      );
      const r = await run(manager, name, STATE_CHECK.replace(/, _\)$/, ', _ == 41)'));
      assert.equal(valueOf(r.result), STATE_EXPECTED.replace(/, 'setup'\)$/, ', True)'));
      assert.equal(r.seq, last.seq + 1, 'seq numbering continues');
    });

    it('names what a swap could not keep in the next result, and keeps the rest', async () => {
      const listener: Server = createServer().listen(0, '127.0.0.1');
      await new Promise((r) => listener.once('listening', r));
      const port = (listener.address() as { port: number }).port;
      try {
        manager = await openManager({ dataDir });
        const name = (await manager.create(machineOptions(engine))).name;
        // What each engine cannot carry: the python engine pickles (no sockets, no generators);
        // the sandbox keeps memory exactly (generators too) but not descriptors (files, sockets).
        const setup =
          engine === 'python'
            ? `import socket\nsock = socket.create_connection(("127.0.0.1", ${port}))\ngen = (i for i in range(3))\nnext(gen)`
            : 'handle = open("/tmp/notes.txt", "w")\nhandle.write("kept on disk")\nhandle.flush()\ngen = (i for i in range(3))\nnext(gen)';
        await run(manager, name, `${setup}\nsafe = [1, 2, 3]`);
        await manager.swap(name);
        const r = await run(manager, name, 'safe');
        assert.equal(valueOf(r.result), '[1, 2, 3]');
        const lost = new Map((r.result.data?.lost ?? []).map((l) => [l.name, l.reason]));
        if (engine === 'python') {
          assert.deepEqual([...lost.keys()].sort(), ['gen', 'sock']);
          assert.match(lost.get('sock')!, /socket/);
          assert.match(lost.get('gen')!, /generator/);
          assert.match(errorOf((await run(manager, name, 'sock')).result), /NameError/);
        } else {
          assert.deepEqual([...lost.keys()], ['handle']);
          assert.match(lost.get('handle')!, /open file '\/tmp\/notes.txt'/);
          assert.match(errorOf((await run(manager, name, 'handle')).result), /NameError/);
          assert.equal(valueOf((await run(manager, name, 'next(gen), open("/tmp/notes.txt").read()')).result), "(1, 'kept on disk')");
        }
        assert.equal((await run(manager, name, '1')).result.data, null, 'losses are reported once');
      } finally {
        listener.close();
      }
    });

    it('takes an exclusive lock on the data dir', async () => {
      manager = await openManager({ dataDir });
      await assert.rejects(openManager({ dataDir }), (error: unknown) => {
        assert.ok(error instanceof DataDirLockedError);
        assert.equal(error.ownerPid, process.pid);
        return true;
      });
      await manager.close();
      manager = await openManager({ dataDir });
    });

    it('recovers every machine from its last snapshot after a kill -9 of the owner', async () => {
      const host = spawn(process.execPath, ['--import', 'tsx', HOST, dataDir], { stdio: ['pipe', 'pipe', 'inherit'] });
      const events: Array<Record<string, unknown>> = [];
      createInterface({ input: host.stdout! }).on('line', (line) => events.push(JSON.parse(line)));
      const send = (command: object) => host.stdin!.write(JSON.stringify(command) + '\n');
      const waitFor = async (test: (e: Record<string, unknown>) => boolean, what: string) => {
        await eventually(() => events.some(test), 20_000, what);
        return events.find(test)!;
      };
      let kernelPid = 0;
      let name: string;
      try {
        await waitFor((e) => e.ready === true, 'host ready');
        send({ op: 'create', engine, python: engine === 'python' ? TEST_PYTHON : undefined });
        name = (await waitFor((e) => typeof e.created === 'string', 'machine')).created as string;
        send({ op: 'exec', name, code: STATE_SETUP });
        await waitFor((e) => (e.event as { type?: string })?.type === 'checkpoint', 'checkpoint');
        // Only what follows counts: the first instruction went busy too.
        events.length = 0;
        send({ op: 'exec', name, code: 'counter = 1000\nimport time\ntime.sleep(600)' });
        kernelPid = (await waitFor((e) => typeof e.busyPid === 'number', 'busy')).busyPid as number;
      } finally {
        host.kill('SIGKILL');
        await new Promise((r) => host.once('exit', r));
      }
      // The kernel dies with its owner rather than running on as an orphan.
      if (kernelPid) await eventually(() => !alive(kernelPid), 5000, 'the orphaned kernel to exit');

      manager = await openManager({ dataDir });
      const r = await run(manager, name, STATE_CHECK.replace(/, _\)$/, ')'));
      assert.equal(valueOf(r.result), STATE_EXPECTED.replace(/, 'setup'\)$/, ')'));
      assert.match(
        r.result.data?.notices?.[0] ?? '',
        /The server stopped unexpectedly\. The machine goes back to its snapshot of .*Effects of instructions 1–1 are lost/,
      );
      // The instruction it stopped in the middle of ends, in its history, with what the machine went back to.
      const stopped = /^The server stopped while this instruction ran: its effects are lost\. The machine goes back to its snapshot of /;
      assert.match(errorOf(await manager.result(name, 1)), stopped);
      assert.match(errorOf((await manager.history(name)).find((entry) => entry.seq === 1)!.result!), stopped);
      assert.equal(r.seq, 2);
    });

    it('swaps out the least recently used machine beyond the warm cap', async () => {
      manager = await openManager({ dataDir, maxWarm: 2 });
      const names: string[] = [];
      for (let i = 0; i < 3; i++) {
        const name = (await manager.create(machineOptions(engine))).name;
        await run(manager, name, `i = ${i}`);
        names.push(name);
      }
      const states = () => names.map((n) => manager!.get(n).state);
      await eventually(() => states()[0] === 'swapped', 10_000, 'the oldest to be swapped over the warm cap');
      assert.deepEqual(states(), ['swapped', 'warm', 'warm']);
      assert.equal(valueOf((await run(manager, names[0]!, 'i')).result), '0');
      await eventually(() => states()[1] === 'swapped', 10_000, 'the next oldest to make room');
      assert.deepEqual(states(), ['warm', 'swapped', 'warm']);
    });

    it('swaps machines out when they have been idle', async () => {
      manager = await openManager({ dataDir, idleSeconds: 1 });
      const name = (await manager.create(machineOptions(engine))).name;
      await run(manager, name, 'i = 7');
      assert.equal(manager.get(name).state, 'warm');
      await eventually(() => manager!.get(name).state === 'swapped', 10_000, 'idle swap');
      assert.equal(valueOf((await run(manager, name, 'i')).result), '7');
    });

    it('lists by tag (all must match), newest first, and deletes every file of a machine', async () => {
      manager = await openManager({ dataDir });
      const a = (await manager.create(machineOptions(engine, { tags: { team: 'x', env: 'dev' } }))).name;
      const b = (await manager.create(machineOptions(engine, { tags: { team: 'x' } }))).name;
      assert.deepEqual(
        manager.list({ team: 'x' }).map((m) => m.name),
        [b, a],
      );
      assert.deepEqual(
        manager.list({ team: 'x', env: 'dev' }).map((m) => m.name),
        [a],
      );
      assert.deepEqual(manager.list({ team: 'nobody' }), []);
      await run(manager, a, 'v = 1');
      await manager.swap(a);
      await manager.delete(a);
      await assert.rejects(access(`${dataDir}/machines/${a}`), /ENOENT/);
      await assert.rejects(manager.exec(a, '1'), MachineGoneError);
      assert.ok(!manager.list().some((m) => m.name === a));
    });

    it('names machines readably (adjective-noun), each once, and never after a deleted machine, even after a restart', async () => {
      manager = await openManager({ dataDir });
      const names = await Promise.all(Array.from({ length: 200 }, () => manager!.create(machineOptions(engine)).then((m) => m.name)));
      for (const name of names) assert.match(name, /^[a-z]+-[a-z]+(-\d+)?$/);
      assert.equal(new Set(names).size, names.length);
      await manager.delete(names[0]!);
      await manager.close();
      manager = await openManager({ dataDir });
      assert.equal(new MachineStore(dataDir).isUsed(names[0]!), true, 'the deleted name is kept from new machines');
      assert.equal(new MachineStore(dataDir).isUsed('never-made'), false);
      // A name asked for is given, but only once.
      assert.equal((await manager.create(machineOptions(engine, { name: 'data-cleaning' }))).name, 'data-cleaning');
      await assert.rejects(manager.create(machineOptions(engine, { name: 'data-cleaning' })), /A machine named data-cleaning already exists/);
      await assert.rejects(
        manager.exec('data-claening', '1'),
        /Machine data-claening does not exist \(it may have been deleted\)\. Did you mean data-cleaning\?/,
      );
    });

    it('refuses bad requests with clear errors', async () => {
      manager = await openManager({ dataDir });
      await assert.rejects(manager.create({ engine: 'nope' as 'python' }), /engine: Invalid option: expected one of "sandbox"\|"python"/);
      await assert.rejects(manager.create(machineOptions(engine, { memoryMb: 1 })), /memoryMb: memory is at least 64 MiB/);
      await assert.rejects(manager.create(machineOptions(engine, { memoryMb: 64.5 })), /memoryMb: memory is a whole number of MiB/);
      await assert.rejects(manager.create(machineOptions(engine, { tags: { 'bad key': 'v' } })), /tags: bad tag key "bad key"/);
      const name = (await manager.create(machineOptions(engine))).name;
      await assert.rejects(manager.exec(name, '1', { timeoutSeconds: -1 }), /a timeout is 0 \(no limit\) or a number of seconds/);
      await assert.rejects(manager.exec(name, '1', { timeoutSeconds: 86401 }), /a timeout is at most 86400 seconds \(a day\); 0 is no limit/);
      await assert.rejects(manager.result(name, 99), /has no instruction 99/);
      await assert.rejects(manager.exec('no-such-machine', '1'), /Machine no-such-machine does not exist/);
    });
  });
}

describe('python engine without dill or cloudpickle', { timeout: 60_000 }, () => {
  it('still keeps functions, closures, classes and dataclasses across a swap', async () => {
    const { dir, cleanup } = await tempDataDir();
    process.env.PERENNIAL_SERIALIZER = 'pickle';
    const manager = await openManager({ dataDir: dir });
    try {
      const name = (await manager.create(machineOptions('python'))).name;
      await run(manager, name, STATE_SETUP);
      await run(manager, name, 'fh = open(__import__("os").devnull)');
      await manager.swap(name);
      const r = await run(manager, name, STATE_CHECK);
      assert.equal(valueOf(r.result), STATE_EXPECTED);
      assert.deepEqual(
        r.result.data?.lost?.map((l) => l.name),
        ['fh'],
      );
    } finally {
      delete process.env.PERENNIAL_SERIALIZER;
      await manager.close();
      await cleanup();
    }
  });
});

describe('a damaged or missing machine.json', { timeout: 120_000 }, () => {
  it('is rebuilt from the snapshot and history; the machine is listed, says so, and keeps its state', async () => {
    const { dir, cleanup } = await tempDataDir();
    let manager = await openManager({ dataDir: dir });
    const manifest = (name: string) => join(dir, 'machines', name, 'machine.json');
    try {
      const garbage = (await manager.create(machineOptions('python', { tags: { team: 'a' } }))).name;
      const halfValid = (await manager.create(machineOptions('sandbox', { tags: { team: 'b' }, memoryMb: 256 }))).name;
      const missing = (await manager.create(machineOptions('python'))).name;
      for (const name of [garbage, halfValid, missing]) {
        await run(manager, name, 'kept = "state"');
        await run(manager, name, 'kept * 2');
        await manager.swap(name);
      }
      await manager.close();

      await writeFile(manifest(garbage), '{"version": 1, "name": "trunc');
      const half = JSON.parse(await readFile(manifest(halfValid), 'utf8')) as Record<string, unknown>;
      await writeFile(manifest(halfValid), JSON.stringify({ ...half, engine: 42, nextSeq: 'many' }));
      await rm(manifest(missing));
      await mkdir(join(dir, 'machines', 'emptyfolder'));
      manager = await openManager({ dataDir: dir });

      assert.deepEqual(
        manager
          .list()
          .map((m) => m.name)
          .sort(),
        [garbage, halfValid, missing].sort(),
        'all listed; a folder with nothing of a machine is not',
      );
      const [g, h, m] = [garbage, halfValid, missing].map((name) => manager.get(name));
      assert.deepEqual([g!.engine, h!.engine, m!.engine], ['python', 'sandbox', 'python'], 'the engine read from the snapshot');
      assert.deepEqual([g!.nextSeq, h!.tags, h!.memoryMb], [2, { team: 'b' }, 256], 'seqs from the history, good fields kept');
      assert.match(
        g!.warnings.join('\n'),
        /manifest could not be read \(machine.json is not JSON .*kept as machine.json.unreadable-\d+\. Reset to defaults: tags, memory cap/,
      );
      assert.match(h!.warnings.join('\n'), /machine.json is not a manifest/);
      assert.match(m!.warnings.join('\n'), /machine.json is missing/);
      const kept = (await readdir(join(dir, 'machines', garbage))).filter((f) => f.startsWith('machine.json.unreadable-'));
      assert.equal(kept.length, 1, 'the damaged file is set aside, not deleted');
      assert.equal(await readFile(join(dir, 'machines', garbage, kept[0]!), 'utf8'), '{"version": 1, "name": "trunc');

      for (const name of [garbage, halfValid, missing]) {
        const r = await run(manager, name, 'kept');
        assert.equal(valueOf(r.result), "'state'");
        assert.equal(r.seq, 2);
        assert.match(r.result.data?.notices?.join('\n') ?? '', /manifest could not be read/, 'the first result says so');
      }
      await manager.close();
      manager = await openManager({ dataDir: dir });
      assert.deepEqual(manager.get(garbage).tags, {}, 'the rebuilt manifest was saved');
      assert.match(manager.get(garbage).warnings.join('\n'), /manifest could not be read/, 'and keeps saying what happened');
    } finally {
      await manager.close();
      await cleanup();
    }
  });
});

describe('an unreadable snapshot', { timeout: 60_000 }, () => {
  const fixture = managerFixture();
  it('is set aside, never deleted; the machine starts empty and its first result says where the file is', async () => {
    const { manager } = fixture;
    const name = (await manager.create(machineOptions('python'))).name;
    await run(manager, name, 'kept = 1');
    await manager.swap(name);
    const snapshot = join(manager.dataDir, 'machines', name, 'snapshot');
    await writeFile(snapshot, 'not a snapshot');
    const r = await run(manager, name, '"kept" in globals()');
    assert.equal(valueOf(r.result), 'False');
    const lost = r.result.data?.lost?.[0];
    assert.equal(lost?.name, '*');
    const kept = /it was kept as (\S+)$/.exec(lost?.reason ?? '')?.[1];
    assert.match(kept ?? '', /snapshot\.unreadable-\d+$/);
    assert.equal(await readFile(kept!, 'utf8'), 'not a snapshot');
  });
});

describe('the data dir format', { timeout: 60_000 }, () => {
  it('a data dir a newer Perennial wrote in a format this one cannot read is refused in one sentence, and left as it was', async () => {
    const { dir, cleanup } = await tempDataDir({ empty: true });
    try {
      const record = JSON.stringify({ format: 99, writtenBy: '9.0.0' });
      await writeFile(join(dir, 'data-dir.json'), record);
      await assert.rejects(
        openManager({ dataDir: dir }),
        new RegExp(
          `^NewerDataDirError: The data dir ${dir} was written by Perennial 9\\.0\\.0 in data format 99, which this Perennial \\(${VERSION.replace(/\./g, '\\.')}\\) cannot read \\(it reads format 1\\); update Perennial, or give this one another data dir \\(--data-dir or PERENNIAL_HOME\\)\\. Nothing was changed\\.$`,
        ),
      );
      assert.deepEqual(await readdir(dir), ['data-dir.json'], 'no lock, no machines folder');
      assert.equal(await readFile(join(dir, 'data-dir.json'), 'utf8'), record);
    } finally {
      await cleanup();
    }
  });

  it('a data dir of an earlier build is marked with the format and the version of the build that opens it', async () => {
    const { dir, cleanup } = await tempDataDir();
    try {
      await (await openManager({ dataDir: dir })).close();
      assert.deepEqual(JSON.parse(await readFile(join(dir, 'data-dir.json'), 'utf8')), { format: 1, writtenBy: VERSION });
    } finally {
      await cleanup();
    }
  });

  it('a history and a checkpoint name their format; ones a newer Perennial wrote are left as they are', async () => {
    const { dir, cleanup } = await tempDataDir();
    try {
      const manager = await openManager({ dataDir: dir });
      const name = (await manager.create(machineOptions('python'))).name;
      await run(manager, name, 'open("kept.txt", "w").write("blob")');
      const machineDir = join(dir, 'machines', name);
      assert.equal((await readFile(join(machineDir, 'history.jsonl'), 'utf8')).split('\n')[0], '{"t":"format","version":1}');
      const first = await manager.checkpoint(name, { label: 'mine' });
      assert.equal(JSON.parse(await readFile(join(machineDir, 'checkpoints', first.id, 'checkpoint.json'), 'utf8')).version, 1);
      // A checkpoint of a newer format, naming the blob: not listed, its id and the blob kept.
      const newer = join(machineDir, 'checkpoints', '99');
      await mkdir(newer);
      const record = JSON.stringify({ version: 2, id: '99', somethingNew: true });
      await writeFile(join(newer, 'checkpoint.json'), record);
      await manager.deleteCheckpoint(name, first.id);
      assert.deepEqual((await manager.checkpoints(name)).map((c) => c.id).includes('99'), false);
      assert.ok((await readdir(join(machineDir, 'checkpoints', 'blobs'))).length > 0, 'blobs a newer record may name are kept');
      assert.equal(await readFile(join(newer, 'checkpoint.json'), 'utf8'), record);
      assert.ok(Number((await manager.checkpoint(name, { label: 'next' })).id) > 99, 'its id is not given again');
      await manager.close();
      // A history of a newer format: read, never written to; the result says the instruction is not in it.
      const history = join(machineDir, 'history.jsonl');
      const lines = (await readFile(history, 'utf8')).split('\n');
      await writeFile(history, ['{"t":"format","version":2}', ...lines.slice(1)].join('\n'));
      const reopened = await openManager({ dataDir: dir });
      const r = await run(reopened, name, '1 + 1');
      assert.equal(valueOf(r.result), '2');
      assert.match(
        r.result.data?.notices?.join('\n') ?? '',
        /not in the machine's history: .*written by a newer Perennial in format 2 \(this one writes format 1\), and is left as it is/,
      );
      assert.equal((await readFile(history, 'utf8')).split('\n')[0], '{"t":"format","version":2}');
      await reopened.close();
    } finally {
      await cleanup();
    }
  });

  it('a python snapshot a newer Perennial wrote is refused and left as it is, not set aside', async () => {
    const { dir, cleanup } = await tempDataDir();
    try {
      const manager = await openManager({ dataDir: dir });
      const name = (await manager.create(machineOptions('python'))).name;
      await run(manager, name, 'kept = 1');
      await manager.swap(name);
      const path = join(dir, 'machines', name, 'snapshot');
      const newer = (await readFile(path, 'latin1')).replaceAll('PERENNIAL-PY-SNAPSHOT-1\n', 'PERENNIAL-PY-SNAPSHOT-2\n');
      await writeFile(path, newer, 'latin1');
      const r = await run(manager, name, 'kept');
      assert.match(
        errorOf(r.result),
        /the snapshot was written by a newer Perennial in format 2, and this one reads format 1; update Perennial to use this machine/,
      );
      assert.equal(await readFile(path, 'latin1'), newer, 'left as it was');
      await manager.close();
    } finally {
      await cleanup();
    }
  });

  it("the version Perennial reports is the package's", async () => {
    const { version } = JSON.parse(await readFile(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { version: string };
    assert.equal(VERSION, version);
  });
});

describe('a machine the server could not save when it stopped', { timeout: 120_000 }, () => {
  it('says so, and why, at its next result: not that the server stopped unexpectedly', async () => {
    const { dir, cleanup } = await tempDataDir();
    let manager = await openManager({ dataDir: dir });
    try {
      const name = (await manager.create({ engine: 'sandbox' })).name;
      await run(manager, name, 'saved = 1');
      await manager.swap(name);
      // A JavaScript object held by Python: no snapshot of the machine can be taken.
      await run(manager, name, 'import js\nholder = js.Object.new()\nlost_at_stop = 2');
      await manager.close();
      manager = await openManager({ dataDir: dir });
      const r = await run(manager, name, '"saved" in globals(), "lost_at_stop" in globals()');
      assert.equal(valueOf(r.result), '(True, False)', JSON.stringify(r.result.data));
      const notice = r.result.data?.notices?.join('\n') ?? '';
      assert.match(
        notice,
        /^When the server stopped \(.+\), this machine could not be saved: .*Python holds a JavaScript Object.* The machine goes back to its snapshot of .+\. Effects of instructions \d+–\d+ are lost\.$/,
      );
      assert.doesNotMatch(notice, /unexpectedly/);
      assert.equal((await run(manager, name, 'None')).result.data, null, 'said once');
    } finally {
      await manager.close();
      await cleanup();
    }
  });
});

describe('python engine: a variable that cannot be loaded', { timeout: 60_000 }, () => {
  const fixture = managerFixture();
  it('takes only the variables that share its objects; the others get the right objects', async () => {
    const { manager } = fixture;
    const name = (await manager.create(machineOptions('python'))).name;
    // Fragile pickles but cannot be loaded; `refers` holds a list that only `broken` saved.
    await run(
      manager,
      name,
      `shared = [1, 2]
class Fragile:
    def __reduce__(self):
        return int, ("not a number",)
inner = ["made inside broken"]
broken = [inner, Fragile()]
refers = {"i": inner}
del inner
after = {"s": shared, "n": 3}`,
    );
    await manager.swap(name);
    const r = await run(manager, name, '(shared, after, after["s"] is shared, Fragile.__name__)');
    assert.equal(valueOf(r.result), "([1, 2], {'s': [1, 2], 'n': 3}, True, 'Fragile')");
    assert.deepEqual(
      r.result.data?.lost?.map((l) => l.name),
      ['broken', 'refers'],
    );
    assert.match(r.result.data!.lost![0]!.reason, /invalid literal for int/);
    assert.match(r.result.data!.lost![1]!.reason, /shares objects with broken/);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
