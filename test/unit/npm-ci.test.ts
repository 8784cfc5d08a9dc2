import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * `npm ci` as a newcomer runs it, on the Node line these tests run on: every line `npm test`
 * covers (this one, and scripts/test-node-lines.sh's) is one the project supports, and installing
 * on it must not warn (an engine a dependency does not support, install scripts not approved).
 * Dry: nothing is installed or fetched; npm checks engines and scripts from the lockfile.
 */
describe(`npm ci on Node ${process.version}`, () => {
  it('prints no warning', () => {
    const run = spawnSync('npm', ['ci', '--dry-run', '--no-audit', '--no-fund'], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
      timeout: 120_000,
      shell: process.platform === 'win32',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.doesNotMatch(`${run.stdout}\n${run.stderr}`, /npm warn/i);
  });
});
