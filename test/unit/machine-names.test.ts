import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PLAIN_NAMES, nearestName, newMachineName } from '../../src/machines/machine-names.ts';

describe('machine names', () => {
  it('are adjective-noun, never one that is taken; a number is added when plain ones keep meeting taken names', () => {
    const taken = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const name = newMachineName((n) => taken.has(n));
      assert.match(name, /^[a-z]+-[a-z]+$/);
      assert.ok(!taken.has(name));
      taken.add(name);
    }
    assert.ok(PLAIN_NAMES > 10_000, `${PLAIN_NAMES} plain names`);
    const everyPlainTaken = (name: string) => /^[a-z]+-[a-z]+$/.test(name) || name.endsWith('-2');
    assert.match(newMachineName(everyPlainTaken), /^[a-z]+-[a-z]+-3$/);
  });

  it('a slip finds the name meant (a letter added, dropped, changed, or two swapped; the start of a name); another name finds none', () => {
    const names = ['brave-otter', 'calm-heron', 'data-cleaning', 'wWSbaskx8s7F_LvD'];
    assert.equal(nearestName('brave-oter', names), 'brave-otter');
    assert.equal(nearestName('calm-herron', names), 'calm-heron');
    assert.equal(nearestName('data-claening', names), 'data-cleaning');
    assert.equal(nearestName('wWSbaskx8s7F_LvE', names), 'wWSbaskx8s7F_LvD');
    assert.equal(nearestName('Brave-Otter', names), 'brave-otter');
    assert.equal(nearestName('data', names), 'data-cleaning');
    assert.equal(nearestName('quick-lynx', names), undefined);
    assert.equal(nearestName('ca', names), undefined, 'too short to be the start of one');
  });
});
