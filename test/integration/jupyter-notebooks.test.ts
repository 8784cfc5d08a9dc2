import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jupyterBed } from '../helpers/jupyter-bed.ts';

/**
 * Notebooks on Perennial kernels as people run them: in jupyter_server through a kill -9 and a
 * restart, renamed and copied; real notebooks beside their files against ipykernel; ipywidgets
 * over comms; nbclient. The kernel's protocol itself: jupyter-kernel.test.ts.
 */
describe('notebooks on Perennial kernels, in Jupyter servers and nbclient', { timeout: 600_000 }, () => {
  const bed = jupyterBed();

  for (const [engine, name] of [
    ['python', 'python_engine_folder'],
    ['sandbox', 'sandbox_engine_folder'],
  ] as const)
    it(`jupyter_server, ${engine} engine: a notebook reads data.csv beside it and writes out.csv there, through a kill -9 and a Jupyter restart; renamed it keeps its machine, a copy gets a fork`, async () => {
      const out = await bed.scenario(name);
      assert.match(out, /wrote out\.csv there/);
      assert.match(out, /the state and the files hold/);
      assert.match(out, /kept its machine after the server restarted/);
      assert.match(out, /a copy of the notebook got a fork of its machine/);
    });

  it('notebooks as people write them (CSVs beside them, files written, pandas, plots, HTML, shell, errors) give the same outputs on ipykernel and on Perennial, cell by cell', async () => {
    const out = await bed.scenario('real_notebooks');
    assert.match(out, /sales\.ipynb gave the same outputs/);
    assert.match(out, /tools\.ipynb gave the same outputs/);
  });

  it("another engine's kernelspec gives the notebook a machine of that engine, and says the first keeps its state", async () => {
    assert.match(await bed.scenario('other_engine'), /the first kept its state/);
  });

  it("ipywidgets 6 (Debian's) over comms both ways: the widget's comm opens, the front end's messages reach its code, comm_info lists it", async () => {
    assert.match(await bed.scenario('widgets'), /ipywidgets 6 .*slider moved to 7/);
  });

  for (const version of [7, 8])
    it(`ipywidgets ${version} over comms: a slider moved reaches the machine; interact's value is in its Output widget, which moving its slider updates`, async () => {
      assert.match(await bed.scenario(`widgets_${version}`), new RegExp(`ipywidgets ${version} .*interact`));
    });

  it('nbclient executes a notebook: streams, a matplotlib figure as image/png, HTML, LaTeX, JSON, a display updated in place, a value, an error', async () => {
    assert.match(await bed.scenario('notebook'), /text\/latex, application\/json, an update/);
  });
});
