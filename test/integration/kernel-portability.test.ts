import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { KERNEL_ROOT } from '../../src/kernel/kernel-package.ts';
import { TEST_PYTHON, tempDataDir } from '../helpers/machines.ts';

const SCRIPT = fileURLToPath(new URL('../fixtures/kernel-portability.py', import.meta.url));

interface Report {
  portable_lost: Array<{ name: string; reason: string }>;
  portable: Record<string, string>;
  cascade_lost: string[];
  cascade: string;
  named_helpers: string[];
}

/**
 * The kernel in a real interpreter: a namespace saved by one Python and loaded by another (a
 * sandbox machine's upgrade to a newer Pyodide, a python machine whose interpreter was updated)
 * keeps its functions, classes, dataclasses and namedtuples, compiled again from their source; and
 * one variable that fails to load takes nothing else with it.
 */
describe('the kernel across Python versions', () => {
  let report: Report;
  let cleanup: () => Promise<void>;

  before(async () => {
    const work = await tempDataDir();
    cleanup = work.cleanup;
    report = JSON.parse(execFileSync(TEST_PYTHON, [SCRIPT, KERNEL_ROOT, work.dir], { encoding: 'utf8' })) as Report;
  });
  after(() => cleanup?.());

  it('loses nothing that has a source', () => {
    assert.deepEqual(report.portable_lost, []);
  });

  const expected: Record<string, string> = {
    function: "(6, 3, 'adds', 't')",
    lambdas: '(12, 2, 5)',
    recursion: '120',
    closure: '(2, 3)',
    super: '(9, 6, KShape(2))',
    decorated: "(21, 'k_decorated')",
    dataclass: "(KItem(name='pen', tags=['blue']), True, [], 'PEN')",
    'frozen dataclass key': "('here', KPoint(x=3, y=0))",
    namedtuple: "(KPair(a=1, b=0), {'a': 1, 'b': 0})",
    'typing.NamedTuple': "('1:x', 'a row', KRow(id=2, label='y'))",
    partial: '13',
  };
  for (const [what, value] of Object.entries(expected)) {
    it(`${what}: compiled again, it behaves as before`, () => assert.equal(report.portable[what], value));
  }

  it("a traceback of a function compiled again points at its cell's line", () => {
    assert.match(report.portable['traceback line']!, /File "<cell 0>", line 3, in k_func\n {4}return a \+ b \+ c/);
  });

  it("a snapshot names the kernel's helpers by the package's top-level names, as the single-module kernel did", () => {
    assert.ok(report.named_helpers.includes('perennial_kernel._rebuild_function'), report.named_helpers.join(', '));
    assert.deepEqual(
      report.named_helpers.filter((name) => !/^perennial_kernel\.[A-Za-z_]+$/.test(name)),
      [],
    );
  });

  it('a variable that fails to load takes only itself: the later ones that share a class and a string with it load', () => {
    assert.deepEqual(report.cascade_lost.sort(), ['a_thing', 'kp_module']);
    assert.equal(report.cascade, "({'kind': <class 'int'>, 'text': 'shared text'}, '3', {'x': <class 'int'>, 'return': <class 'str'>})");
  });
});
