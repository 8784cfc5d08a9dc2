import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { DisplayBundle, ExecResult } from '../../src/shared/types.ts';
import { errorOf, machineOptions, managerFixture, run, TEST_PYTHON, valueOf } from '../helpers/machines.ts';

const repr = (list: number[]) => `[${list.join(', ')}]`;
const displays = (result: ExecResult): DisplayBundle[] => (result.data?.display ?? []).filter((e): e is DisplayBundle => 'data' in e);

describe('IPython syntax, magics and display on the python engine, whose interpreter has IPython', { timeout: 300_000 }, () => {
  const fixture = managerFixture({}, { empty: true });
  let name: string;

  before(async () => {
    execFileSync(TEST_PYTHON, ['-c', 'import IPython'], { stdio: 'ignore' });
    name = (await fixture.manager.create(machineOptions('python'))).name;
  });

  it('runs line and cell magics on the namespace, and gives the value of a %%time cell', async () => {
    const timed = await run(fixture.manager, name, '%time t_x = 1 + 1');
    assert.match(timed.stdout, /Wall time/);
    assert.equal(valueOf((await run(fixture.manager, name, 't_x')).result), '2');
    const cell = await run(fixture.manager, name, '%%time\nt_y = 3\nt_y * 2');
    assert.equal(valueOf(cell.result), '6');
    assert.match(cell.stdout, /Wall time/);
    const timeit = await run(fixture.manager, name, '%timeit -n 3 -r 2 sum(range(10))');
    assert.match(timeit.stdout, /per loop \(mean ± std\. dev\. of 2 runs, 3 loops each\)/);
  });

  it('runs shell commands with ! and captures their lines with var = !cmd', async () => {
    assert.match((await run(fixture.manager, name, '!echo from-the-shell')).stdout, /from-the-shell/);
    valueOf((await run(fixture.manager, name, 't_lines = !printf "a\\nb\\n"')).result);
    assert.equal(valueOf((await run(fixture.manager, name, 'list(t_lines)')).result), "['a', 'b']");
  });

  it("gives get_ipython() a working shell, automagic and ? help (IPython's pager as a display)", async () => {
    const shell = await run(fixture.manager, name, 'from IPython.core.interactiveshell import InteractiveShell\nisinstance(get_ipython(), InteractiveShell)');
    assert.equal(valueOf(shell.result), 'True');
    const cwd = valueOf((await run(fixture.manager, name, 'import os\nos.getcwd()')).result);
    assert.equal(valueOf((await run(fixture.manager, name, 'pwd')).result), cwd);
    // IPython's pager: a display marked for Jupyter's pager, which every other surface shows as text.
    const help = await run(fixture.manager, name, 't_x?');
    assert.equal(help.stdout, '');
    const [page] = displays(help.result);
    assert.equal(page?.page, true);
    assert.match(String(page?.data['text/plain']), /Type:\s+int/);
  });

  it('keeps the value repr, and adds what IPython shows for it: %precision, pretty text, HTML', async () => {
    const pi = await run(fixture.manager, name, '%precision 3\nimport math\nmath.pi');
    assert.equal(valueOf(pi.result), '3.141592653589793', 'the ForeverVM value stays the repr');
    assert.deepEqual(
      displays(pi.result).map((d) => [d.result, d.data['text/plain']]),
      [[true, '3.142']],
    );
    const frame = await run(fixture.manager, name, 'import pandas as pd\nt_df = pd.DataFrame({"a": [1, 2]})\nt_df');
    assert.match(valueOf(frame.result) ?? '', /a\n0\s+1/);
    assert.match(String(displays(frame.result)[0]?.data['text/html']), /<table/);
  });

  it('puts what a cell displayed in the result, in order and in its place among the output', async () => {
    const { result, chunks } = await run(
      fixture.manager,
      name,
      'print("before")\ndisplay(t_df)\nfrom IPython.display import HTML, Markdown\ndisplay(HTML("<b>bold</b>"), Markdown("*it*"))\nprint("after")',
    );
    assert.deepEqual(
      chunks.map((c) => c.data),
      ['before', 'after'],
    );
    const shown = displays(result);
    assert.equal(shown.length, 3);
    assert.match(String(shown[0]!.data['text/html']), /<table/);
    assert.equal(shown[1]!.data['text/html'], '<b>bold</b>');
    assert.equal(shown[2]!.data['text/markdown'], '*it*');
    assert.deepEqual(
      shown.map((d) => d.afterOutput),
      [1, 1, 1],
    );
  });

  it('keeps display ids and clear_output in the order given', async () => {
    const { result } = await run(
      fixture.manager,
      name,
      'from IPython.display import clear_output, update_display\ndisplay("one", display_id="d")\nupdate_display("two", display_id="d")\nclear_output(wait=True)\ndisplay("three")',
    );
    const entries = result.data?.display ?? [];
    assert.deepEqual(
      entries.map((e) => ('data' in e ? [e.data['text/plain'], e.transient?.display_id ?? null, e.update ?? false] : ['clear', 'wait' in e && e.wait])),
      [
        ["'one'", 'd', false],
        ["'two'", 'd', true],
        ['clear', true],
        ["'three'", null, false],
      ],
    );
  });

  it("runs ipywidgets (Debian's): a widget's comm opens among the displays, and interact shows its text form", async () => {
    // Nothing of it stays in the namespace: a widget is a live object a swap cannot keep, and the swap test below expects no loss.
    const code = 'import ipywidgets as w\nslider = w.IntSlider(value=3)\ndisplay(slider)\nshown = w.interact(lambda n: n * 2, n=4)\ndel slider, shown, w';
    const cell = await run(fixture.manager, name, code);
    assert.ok(!('error' in cell.result), JSON.stringify(cell.result));
    const entries = cell.result.data?.display ?? [];
    const opened = entries.flatMap((e) => ('comm' in e && e.comm.msg_type === 'comm_open' ? [e.comm.content] : []));
    assert.ok(
      opened.some((content) => content.target_name === 'jupyter.widget' && (content.data as { value?: number }).value === 3),
      JSON.stringify(opened),
    );
    const shown = displays(cell.result).map((bundle) => bundle.data['text/plain']);
    assert.ok(
      shown.some((text) => typeof text === 'string' && text.includes('IntSlider')),
      JSON.stringify(shown),
    );
    assert.ok(shown.includes('8'), JSON.stringify(shown));
  });

  it("shows the user's frames only, and a misused magic in one line", async () => {
    valueOf((await run(fixture.manager, name, 'def t_fail():\n    return 1 / 0')).result);
    const timed = await run(fixture.manager, name, '%time t_fail()');
    assert.match(timed.stderr, /ZeroDivisionError: division by zero/);
    assert.match(timed.stderr, /line 2, in t_fail/);
    assert.doesNotMatch(timed.stderr, /IPython|perennial_kernel/);
    assert.equal(errorOf((await run(fixture.manager, name, '%no_such_magic')).result), 'UsageError: Line magic function `%no_such_magic` not found.');
  });

  it('takes %matplotlib inline, gives a figure once, and refuses a GUI backend in one line', async () => {
    const inline = await run(fixture.manager, name, '%matplotlib inline');
    assert.equal(inline.result.data?.display, undefined);
    valueOf(inline.result);
    const plotted = await run(fixture.manager, name, 'import matplotlib.pyplot as plt\nt_lines2d = plt.plot([1, 2, 3])');
    assert.equal(plotted.result.data?.images?.length, 1, 'one figure, not one from Perennial and one from the inline backend');
    assert.match(errorOf((await run(fixture.manager, name, '%matplotlib qt')).result), /^UsageError: a Perennial machine has no window for qt to open/);
  });

  it("shows values as Jupyter does: IPython's pretty text, pandas laid out for a notebook", async () => {
    const long = await run(fixture.manager, name, 'list(range(30))');
    assert.equal(valueOf(long.result), repr(Array.from({ length: 30 }, (_, i) => i)));
    assert.equal(displays(long.result)[0]?.data['text/plain'], `[${Array.from({ length: 30 }, (_, i) => i).join(',\n ')}]`);
    const wide = await run(fixture.manager, name, 'import pandas as pd\nprint(pd.DataFrame({f"column_{i}": [i] for i in range(12)}))');
    assert.doesNotMatch(wide.stdout, /\.\.\./, 'every column, wrapped at 80 characters, as in a notebook');
    assert.match(wide.stdout, /column_11/);
  });

  it("loads IPython extensions with %load_ext, whose magics work as in IPython, and again after a swap: line_profiler's %lprun, memory_profiler's %memit", async () => {
    await run(
      fixture.manager,
      name,
      '%load_ext line_profiler\n%load_ext memory_profiler\ndef t_work(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total',
    );
    const check = async () => {
      // %lprun gives its report to IPython's pager: a display here, as Jupyter's pager shows it; the
      // loop's two lines ran 1000 times each. (It cites no source: line_profiler reads the source
      // of IPython's and ipykernel's cell files only, and a machine's are named <cell N>.)
      const profiled = await run(fixture.manager, name, '%lprun -f t_work t_work(1000)');
      assert.ok(!('error' in profiled.result), JSON.stringify(profiled.result));
      const report = String(displays(profiled.result)[0]?.data['text/plain']);
      assert.match(report, /Line #\s+Hits\s+Time/);
      assert.equal(report.match(/^\s+\d+\s+1000\s/gm)?.length, 2, report);
      const memory = await run(fixture.manager, name, '%memit t_work(1000)');
      assert.match(memory.stdout, /peak memory: [\d.]+ MiB, increment: /);
    };
    await check();
    await fixture.manager.swap(name);
    await check();
  });

  it("keeps the user's variables across a swap, and not IPython's own (In, Out, get_ipython), nor names one of them lost", async () => {
    // `_` is the shell now: the kernel's own object, which a swap leaves out without a word.
    await run(fixture.manager, name, 'get_ipython()');
    await fixture.manager.swap(name);
    const after = await run(fixture.manager, name, '%time t_z = t_x + t_y');
    assert.equal(after.result.data?.lost, undefined, 'nothing reported lost');
    assert.equal(valueOf((await run(fixture.manager, name, '(t_z, list(t_lines), t_df.shape)')).result), "(5, ['a', 'b'], (2, 1))");
    const pi = await run(fixture.manager, name, 'math.pi');
    assert.deepEqual(
      displays(pi.result).map((d) => d.data['text/plain']),
      ['3.142'],
      '%precision 3 still holds: the magics that set state are replayed',
    );
    assert.match(valueOf((await run(fixture.manager, name, 'import matplotlib\nmatplotlib.get_backend()')).result) ?? '', /matplotlib_inline/);
    const names = (await fixture.manager.kernel(name, 'variables', {})).map((v: { name: string }) => v.name);
    for (const own of ['In', 'Out', 'get_ipython', '_ih', '_oh']) assert.ok(!names.includes(own), `${own} is not a variable`);
    assert.ok(names.includes('t_df'));
  });
});

describe('IPython syntax on an interpreter without IPython', { timeout: 120_000 }, () => {
  const fixture = managerFixture({}, { empty: true });
  let name: string;

  before(async () => {
    // A virtual environment of the test interpreter without its packages: no IPython, no pandas.
    const venv = join(process.cwd(), '.cache', 'python-without-packages');
    if (!existsSync(join(venv, 'bin', 'python3'))) execFileSync(TEST_PYTHON, ['-m', 'venv', '--without-pip', venv]);
    const python = join(venv, 'bin', 'python3');
    assert.throws(() => execFileSync(python, ['-c', 'import IPython'], { stdio: 'ignore' }));
    name = (await fixture.manager.create({ engine: 'python', python })).name;
  });

  it('says in one sentence that the cell needs IPython, and how to install it', async () => {
    const error = errorOf((await run(fixture.manager, name, 'x = 1\n%timeit x + 1')).result);
    assert.match(
      error,
      /^IPythonMissing: this cell uses IPython syntax \(%timeit\), and this machine's Python has no IPython: install the package ipython into this machine \(perennial install NAME ipython, the install-python-packages tool, or VS Code's Install Packages\), then run the cell again\.$/,
    );
    assert.equal(
      errorOf((await run(fixture.manager, name, 'x')).result)
        .split('\n')
        .at(-1),
      "NameError: name 'x' is not defined",
      'nothing of the cell ran',
    );
  });

  it("still displays an object's own MIME bundle with the display builtin", async () => {
    const { result } = await run(
      fixture.manager,
      name,
      'class Badge:\n    def _repr_html_(self):\n        return "<b>ok</b>"\n    def __repr__(self):\n        return "Badge()"\ndisplay(Badge())\nBadge()',
    );
    assert.equal(valueOf(result), 'Badge()');
    assert.deepEqual(
      displays(result).map((d) => [d.data['text/html'], d.result ?? false]),
      [
        ['<b>ok</b>', false],
        ['<b>ok</b>', true],
      ],
    );
  });
});
