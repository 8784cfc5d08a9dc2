import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { MachineManager } from '../../src/machines/machine-manager.ts';
import { ENGINES_UNDER_TEST, PNG_CODE, errorOf, machineOptions, managerFixture, run, valueOf } from '../helpers/machines.ts';

/** Width and height from a PNG's IHDR, after checking its signature. */
function pngSize(base64: string): { width: number; height: number } {
  const png = Buffer.from(base64, 'base64');
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  assert.equal(png.toString('latin1', 12, 16), 'IHDR');
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

for (const engine of ENGINES_UNDER_TEST) {
  describe(`execution on the ${engine} engine`, { timeout: 120_000 }, () => {
    const fixture = managerFixture();
    let manager: MachineManager;
    let name: string;

    before(async () => {
      manager = fixture.manager;
      name = (await manager.create(machineOptions(engine))).name;
    });

    it('gives the repr of the last expression, like ForeverVM', async () => {
      const cases: Array<[string, string | null]> = [
        ['1 + 1', '2'],
        ["'done'", "'done'"],
        ['x = 5', null],
        ['x * 2', '10'],
        ['x * 2;', null],
        ['None', null],
        ['[1, "a", None]', "[1, 'a', None]"],
        ['if x:\n    y = 1\ny', '1'],
      ];
      for (const [code, value] of cases) {
        assert.equal(valueOf((await run(manager, name, code)).result), value, code);
      }
    });

    it('prints and returns: print(123) or 567', async () => {
      const r = await run(manager, name, 'print(123) or 567');
      assert.equal(valueOf(r.result), '567');
      assert.deepEqual(r.chunks, [{ stream: 'stdout', data: '123', seq: 0 }]);
    });

    it('keeps the last value in _', async () => {
      await run(manager, name, '6 * 7');
      await run(manager, name, 'z = 1');
      assert.equal(valueOf((await run(manager, name, '_ + 1')).result), '43');
    });

    it('keeps variables, functions, classes and imports across instructions', async () => {
      await run(manager, name, 'import math\nfrom collections import Counter\ncount = Counter("hello")');
      await run(manager, name, 'def area(r):\n    return round(math.pi * r * r, 2)');
      await run(manager, name, 'class Box:\n    def __init__(self, v): self.v = v\n    def __repr__(self): return f"Box({self.v})"');
      assert.equal(valueOf((await run(manager, name, 'Box(area(2)), count["l"]')).result), '(Box(12.57), 2)');
    });

    it('streams stdout and stderr in order, one chunk per line, seq from 0', async () => {
      const r = await run(manager, name, 'import sys\nfor i in range(3):\n    print("out", i)\n    print("err", i, file=sys.stderr)\nprint("a\\nb")');
      assert.deepEqual(
        r.chunks.map((c) => [c.seq, c.stream, c.data]),
        [
          [0, 'stdout', 'out 0'],
          [1, 'stderr', 'err 0'],
          [2, 'stdout', 'out 1'],
          [3, 'stderr', 'err 1'],
          [4, 'stdout', 'out 2'],
          [5, 'stderr', 'err 2'],
          [6, 'stdout', 'a'],
          [7, 'stdout', 'b'],
        ],
      );
    });

    it('delivers output while the cell still runs, partial lines included', async () => {
      // The cell computes without pause (nothing of its own gives the output a chance to leave)
      // and ends only when the test, having seen its partial line, interrupts it; output held
      // back until the end would leave it to its timeout instead.
      const { seq, done } = await manager.exec(name, 'print("ready")\nprint("start", end="")\nwhile True:\n    pass', { timeoutSeconds: 30 });
      const arrivals: string[] = [];
      const result = await manager.follow(name, seq, (c) => {
        arrivals.push(c.data);
        if (c.data === 'start') manager.interrupt(name);
      });
      const error = errorOf(result);
      assert.match(error, /KeyboardInterrupt$/);
      assert.doesNotMatch(error, /Timed out/, 'stopped by the interrupt the partial line prompted');
      assert.deepEqual(arrivals, ['ready', 'start']);
      assert.deepEqual(await done, result);
    });

    it('captures output written by subprocesses', { skip: engine === 'sandbox' && 'the sandbox has no processes' }, async () => {
      const r = await run(manager, name, 'import subprocess\nsubprocess.run(["echo", "from a child"])');
      assert.match(r.stdout, /from a child/);
    });

    it("shows tracebacks of the user's cells, not the kernel's frames", async () => {
      await run(manager, name, 'def divide(a, b):\n    return a / b');
      const r = await run(manager, name, 'divide(1, 0)');
      const error = errorOf(r.result);
      assert.match(error, /^Traceback \(most recent call last\):/);
      assert.match(error, new RegExp(`File "<cell ${r.seq}>", line 1, in <module>`));
      assert.match(error, /return a \/ b/);
      assert.match(error, /ZeroDivisionError: division by zero$/);
      assert.doesNotMatch(error, /perennial_kernel/);
      const syntax = errorOf((await run(manager, name, 'def broken(:\n  pass')).result);
      assert.match(syntax, /SyntaxError/);
      assert.doesNotMatch(syntax, /perennial_kernel|Traceback/);
    });

    it('answers input() with a clear error instead of hanging', async () => {
      const r = await run(manager, name, 'input("name? ")');
      assert.match(errorOf(r.result), /EOFError: input\(\) has no answer: .*; put the value in the code instead$/);
      assert.equal(r.stdout, 'name? ');
    });

    it('ignores garbage written to its private channel', { skip: engine !== 'python' && "the channel is the python engine's fd 4" }, async () => {
      const r = await run(manager, name, 'import os\nos.write(4, b"not json\\n{\\"ev\\": 1}\\n")\n"still fine"');
      assert.equal(valueOf(r.result), "'still fine'");
    });

    it('survives exit() and SystemExit', async () => {
      assert.match(errorOf((await run(manager, name, 'import sys; sys.exit(3)')).result), /SystemExit: 3/);
      assert.equal(valueOf((await run(manager, name, '"alive"')).result), "'alive'");
    });

    it('caps the output of one instruction at 1 MiB with a clear marker', async () => {
      // Time enough for 40,000 prints on a loaded machine: the default 15 s is not what is tested.
      const r = await run(manager, name, 'for i in range(40000):\n    print("x" * 63)\n"finished"', { timeoutSeconds: 120 });
      assert.equal(valueOf(r.result), "'finished'");
      const total = r.chunks.reduce((n, c) => n + c.data.length + 1, 0);
      assert.ok(total <= (1 << 20) + 200, `kept ${total} bytes`);
      assert.ok(total > (1 << 20) - 200, `kept ${total} bytes`);
      assert.match(r.stdout, /output truncated at 1048576 bytes; 1511424 more bytes were dropped/);
    });

    it('supports top-level await', async () => {
      assert.equal(valueOf((await run(manager, name, 'import asyncio\nawait asyncio.sleep(0.01)\n"awaited"')).result), "'awaited'");
    });

    it(
      'turns matplotlib figures into PNGs: data.png first, all in data.images',
      { skip: engine === 'sandbox' && 'matplotlib is not installed offline' },
      async () => {
        const r = await run(
          manager,
          name,
          'import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\nfig = plt.figure(figsize=(4, 2))\nplt.bar(["a", "b"], [1, 2])\n"plotted"',
        );
        assert.equal(valueOf(r.result), "'plotted'");
        const data = r.result.data!;
        assert.equal(data.images?.length, 2);
        assert.equal(data.png, data.images![0]!.data);
        const first = pngSize(data.images![0]!.data);
        const second = pngSize(data.images![1]!.data);
        assert.ok(first.width > 100 && first.height > 100);
        assert.ok(second.width > second.height, 'the 4x2 figure is wider than tall');
        const again = await run(manager, name, '1');
        assert.equal(again.result.data, null, 'figures are closed after they are sent');
      },
    );

    it('shows an object with _repr_png_ as an image', async () => {
      const r = await run(manager, name, `${PNG_CODE}\nclass Pic:\n    def _repr_png_(self):\n        return make_png(30, 20)\nPic()`);
      assert.deepEqual(pngSize(r.result.data!.png!), { width: 30, height: 20 });
      assert.match(valueOf(r.result)!, /<__main__\.Pic object at/);
    });

    it('lists variables, shows one, completes names and inspects objects', async () => {
      await run(
        manager,
        name,
        'numbers = list(range(1000))\ngreeting = "hi"\ndef greet(who: str, punct="!") -> str:\n    "Say hello."\n    return f"{greeting} {who}{punct}"',
      );
      const variables = await manager.kernel(name, 'variables', {});
      const byName = new Map(variables.map((v) => [v.name, v]));
      assert.deepEqual(byName.get('numbers'), { name: 'numbers', type: 'list', repr: byName.get('numbers')!.repr, size: 1000 });
      assert.ok(byName.get('numbers')!.repr.length <= 200);
      assert.equal(byName.get('greeting')?.repr, "'hi'");
      assert.equal(byName.get('greet')?.type, 'function');
      assert.ok(!byName.has('math'), 'modules are not variables');
      assert.ok(![...byName.keys()].some((n) => n.startsWith('__')));
      const detail = await manager.kernel(name, 'variable', { name: 'numbers' });
      assert.equal(detail.truncated, false);
      assert.ok(detail.repr.includes('999'));
      await assert.rejects(manager.kernel(name, 'variable', { name: 'missing' }), /no variable named 'missing'/);
      assert.ok((await manager.complete(name, { code: 'gree' })).matches.includes('greet('));
      assert.ok((await manager.complete(name, { code: 'greeting.up' })).matches.includes('greeting.upper()'), 'no-argument methods complete with ()');
      // The cursor and the start count UTF-16 code units, as editors do, whatever comes before.
      const code = 'print("🐍", gree) # later';
      assert.deepEqual(await manager.complete(name, { code, cursor: code.indexOf(')') }), { matches: ['greeting', 'greet('], start: code.indexOf('gree') });
      await assert.rejects(manager.complete(name, { code: 'gree', cursor: 5 }), /cursor is past the end/);
      const info = await manager.kernel(name, 'inspect', { expr: 'greet' });
      assert.equal(info.signature, "(who: str, punct='!') -> str");
      assert.equal(info.doc, 'Say hello.');
      await assert.rejects(manager.kernel(name, 'inspect', { expr: 'greet()' }), /not a dotted name/);
      assert.equal(await manager.kernel(name, 'is_complete', { code: 'def f():' }), 'incomplete');
      assert.equal(await manager.kernel(name, 'is_complete', { code: 'x = 1' }), 'complete');
    });

    it('starts with an empty namespace; a reset empties it again (its own modules go, files stay), and outlives a swap', async () => {
      const machine = (await manager.create(machineOptions(engine))).name;
      assert.equal(
        valueOf((await run(manager, machine, '[k for k in globals() if not k.startswith("__")]')).result),
        '[]',
        'a new machine has no names of its own',
      );
      await manager.kernel(machine, 'write_file', { path: 'mine.py', content: Buffer.from('N = 1\n').toString('base64') });
      await run(manager, machine, 'import json, mine\nkept = mine.N');
      assert.deepEqual(await manager.kernel(machine, 'reset', {}), { cleared: 4 }, 'json, mine, kept and _');
      await manager.kernel(machine, 'write_file', { path: 'mine.py', content: Buffer.from('N = 2\n').toString('base64') });
      await manager.swap(machine);
      assert.equal(valueOf((await run(manager, machine, '"kept" in globals(), "json" in globals(), __import__("mine").N')).result), '(False, False, 2)');
    });

    it('turns an allocation beyond memory_mb into MemoryError; the machine lives', async () => {
      const small = (await manager.create(machineOptions(engine, { memoryMb: 256 }))).name;
      await run(manager, small, 'kept = "still here"');
      assert.match(errorOf((await run(manager, small, 'block = bytearray(600 * 1024 * 1024)')).result), /MemoryError/);
      assert.match(errorOf((await run(manager, small, 'blocks = [bytearray(16 * 1024 * 1024) for _ in range(100)]')).result), /MemoryError/);
      assert.equal(valueOf((await run(manager, small, 'kept')).result), "'still here'");
      await manager.delete(small);
    });
  });
}
