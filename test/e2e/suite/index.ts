/**
 * The suite's entry in VS Code's extension host: runs the tests with mocha (tdd interface) and
 * adds each test's outcome to $PERENNIAL_E2E_RESULTS for the runner's summary. After a window
 * reload the runner asked for ($PERENNIAL_E2E_RELOADED exists), it runs what checks the reload.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import Mocha from 'mocha';

export async function run(): Promise<void> {
  // PERENNIAL_E2E_GREP runs only the tests whose titles match it.
  const mocha = new Mocha({ ui: 'tdd', timeout: 180_000, color: false, ...(process.env.PERENNIAL_E2E_GREP ? { grep: process.env.PERENNIAL_E2E_GREP } : {}) });
  mocha.suite.emit('pre-require', globalThis, 'perennial-e2e', mocha);
  // Loaded after pre-require, so that `suite` and `test` exist as they register.
  if (process.env.PERENNIAL_E2E_RELOADED && existsSync(process.env.PERENNIAL_E2E_RELOADED)) await import('./after-reload.test.ts');
  else {
    await import('./extension.test.ts');
    await import('./notebook.test.ts');
    await import('./chat.test.ts');
  }
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
