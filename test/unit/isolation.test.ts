import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detectIsolation } from '../../src/engines/sandbox/isolation.ts';

describe('sandbox isolation without bubblewrap', () => {
  for (const [platform, system] of [
    ['darwin', 'macOS'],
    ['win32', 'Windows'],
  ] as const) {
    it(`on ${system}: says there is none there, and what confines a machine instead`, () => {
      const isolation = detectIsolation({}, platform);
      assert.equal(isolation.bubblewrap, false);
      assert.match(isolation.warning ?? '', new RegExp(`^there is no bubblewrap on ${system}: `));
      assert.match(isolation.warning ?? '', /Node's permission model \(files, processes, addons\) and have no network unless made with it/);
      assert.doesNotMatch(isolation.warning ?? '', /not installed/);
    });
  }

  it('on Linux, turned off: says so, and the same of what remains', () => {
    const isolation = detectIsolation({ PERENNIAL_SANDBOX_BUBBLEWRAP: 'off' }, 'linux');
    assert.equal(isolation.bubblewrap, false);
    assert.match(isolation.warning ?? '', /^bubblewrap is turned off \(PERENNIAL_SANDBOX_BUBBLEWRAP=off\): .*no network unless made with it/);
  });
});
