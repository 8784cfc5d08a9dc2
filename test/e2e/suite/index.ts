/**
 * The suite's entry in VS Code's extension host: runs the tests with mocha (tdd interface) and
 * writes each test's outcome to $PERENNIAL_E2E_RESULTS for the runner's summary.
 */
import { writeFileSync } from 'node:fs';
import Mocha from 'mocha';

export async function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', timeout: 180_000, color: false });
  mocha.suite.emit('pre-require', globalThis, 'perennial-e2e', mocha);
  // Loaded after pre-require, so that `suite` and `test` exist as they register.
  await import('./extension.test.ts');
  const outcomes: Array<{ title: string; state: string; error?: string }> = [];
  await new Promise<void>((resolve, reject) => {
    const runner = mocha.run((failures) => {
      if (process.env.PERENNIAL_E2E_RESULTS) writeFileSync(process.env.PERENNIAL_E2E_RESULTS, JSON.stringify({ tests: outcomes }));
      if (failures) reject(new Error(`${failures} end-to-end tests failed`));
      else resolve();
    });
    runner.on('pass', (test) => outcomes.push({ title: test.fullTitle(), state: 'passed' }));
    runner.on('fail', (test, error: Error) => outcomes.push({ title: test.fullTitle(), state: 'failed', error: error.stack ?? error.message }));
  });
}
