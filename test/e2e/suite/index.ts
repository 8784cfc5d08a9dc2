/**
 * The suite's entry in VS Code's extension host: runs the tests with mocha (tdd interface) and
 * adds each test's outcome to $PERENNIAL_E2E_RESULTS for the runner's summary. After a window
 * reload the runner asked for ($PERENNIAL_E2E_RELOADED exists), it runs what checks the reload.
 * $PERENNIAL_E2E_ORDER `reverse` or `shuffle[:SEED]` runs the suites, and the tests in each, in
 * another order: no test may depend on another.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import Mocha from 'mocha';
import { NeedsPageError } from './workbench.ts';

/** The order $PERENNIAL_E2E_ORDER asks for, of the suites and of each suite's tests. */
function reorder(root: Mocha.Suite, order: string): void {
  const [kind, given] = order.split(':');
  let seed = Number(given ?? Date.now() % 100_000);
  // A small seeded generator (mulberry32), so that an order that fails can be run again.
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const arrange = <T>(items: T[]) => {
    if (kind === 'reverse') items.reverse();
    else
      for (let i = items.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [items[i], items[j]] = [items[j]!, items[i]!];
      }
  };
  if (kind !== 'reverse' && kind !== 'shuffle') throw new Error(`PERENNIAL_E2E_ORDER is reverse or shuffle[:SEED], not ${order}`);
  if (kind === 'shuffle') console.log(`the suite's order: shuffle:${seed}`);
  arrange(root.suites);
  for (const suite of root.suites) arrange(suite.tests);
}

/** In desktop VS Code: a test that reaches for the page is skipped, with the reason, not failed. */
function skipWhereThePageIsNeeded(suite: Mocha.Suite): void {
  for (const test of suite.tests) {
    const body = test.fn;
    if (!body) continue;
    test.fn = async function (this: Mocha.Context) {
      try {
        await (body as (this: Mocha.Context) => unknown).call(this);
      } catch (error) {
        if (!(error instanceof NeedsPageError)) throw error;
        console.log(`skipped: ${test.fullTitle()}: ${error.message}`);
        this.skip();
      }
    };
  }
  for (const child of suite.suites) skipWhereThePageIsNeeded(child);
}

export async function run(): Promise<void> {
  // PERENNIAL_E2E_GREP runs only the tests whose titles match it.
  const mocha = new Mocha({ ui: 'tdd', timeout: 180_000, color: false, ...(process.env.PERENNIAL_E2E_GREP ? { grep: process.env.PERENNIAL_E2E_GREP } : {}) });
  mocha.suite.emit('pre-require', globalThis, 'perennial-e2e', mocha);
  // Loaded after pre-require, so that `suite` and `test` exist as they register.
  if (process.env.PERENNIAL_E2E_RELOADED && existsSync(process.env.PERENNIAL_E2E_RELOADED)) await import('./after-reload.test.ts');
  else {
    await import('./extension.test.ts');
    await import('./backends.test.ts');
    await import('./notebook.test.ts');
    await import('./chat.test.ts');
  }
  if (process.env.PERENNIAL_E2E_ORDER) reorder(mocha.suite, process.env.PERENNIAL_E2E_ORDER);
  if (process.env.PERENNIAL_E2E_DESKTOP === '1') skipWhereThePageIsNeeded(mocha.suite);
  const results = process.env.PERENNIAL_E2E_RESULTS;
  const outcomes: Array<{ title: string; state: string; error?: string }> =
    results && existsSync(results) ? (JSON.parse(readFileSync(results, 'utf8')) as { tests: [] }).tests : [];
  await new Promise<void>((resolve, reject) => {
    const runner = mocha.run((failures) => {
      if (results) writeFileSync(results, JSON.stringify({ tests: outcomes }));
      if (failures) reject(new Error(`${failures} end-to-end tests failed`));
      else resolve();
    });
    runner.on('pass', (test) => outcomes.push({ title: test.fullTitle(), state: 'passed' }));
    runner.on('fail', (test, error: Error) => outcomes.push({ title: test.fullTitle(), state: 'failed', error: error.stack ?? error.message }));
  });
}
