import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from 'commander';
import { collectTag, positiveInteger, positiveNumber, timeoutSeconds } from '../../src/cli/options.ts';
import { defaultDataDir } from '../../src/platform/data-dir.ts';

describe('CLI option parsers', () => {
  const tagCases: Array<[string, Record<string, string> | undefined, Record<string, string>]> = [
    ['team=a', undefined, { team: 'a' }],
    ['team=a', { env: 'dev' }, { env: 'dev', team: 'a' }],
    ['url=http://x?a=b', undefined, { url: 'http://x?a=b' }],
    ['empty=', undefined, { empty: '' }],
  ];
  for (const [input, before, expected] of tagCases) {
    it(`--tag ${input}`, () => assert.deepEqual(collectTag(input, before), expected));
  }
  for (const bad of ['team', '=a', '']) {
    it(`--tag ${JSON.stringify(bad)} is refused`, () => assert.throws(() => collectTag(bad), InvalidArgumentError));
  }

  const numberCases: Array<[string, number | null, number | null]> = [
    ['15', 15, 15],
    ['0.5', 0.5, null],
    ['0', null, null],
    ['-3', null, null],
    ['abc', null, null],
    ['Infinity', null, null],
  ];
  for (const [input, seconds] of [
    ['0', 0],
    ['15', 15],
    ['0.5', 0.5],
    ['-1', null],
    ['abc', null],
    ['Infinity', null],
  ] as const) {
    it(`--timeout ${input}`, () => {
      if (seconds === null) assert.throws(() => timeoutSeconds(input), InvalidArgumentError);
      else assert.equal(timeoutSeconds(input), seconds);
    });
  }
  for (const [input, asNumber, asInteger] of numberCases) {
    it(`positive number/integer of ${input}`, () => {
      if (asNumber === null) assert.throws(() => positiveNumber(input), InvalidArgumentError);
      else assert.equal(positiveNumber(input), asNumber);
      if (asInteger === null) assert.throws(() => positiveInteger(input), InvalidArgumentError);
      else assert.equal(positiveInteger(input), asInteger);
    });
  }
});

describe('defaultDataDir', () => {
  it('prefers PERENNIAL_HOME', () => assert.equal(defaultDataDir({ PERENNIAL_HOME: '/x/y' }), '/x/y'));
  it('uses XDG_DATA_HOME on Linux', { skip: process.platform !== 'linux' }, () => assert.equal(defaultDataDir({ XDG_DATA_HOME: '/d' }), '/d/perennial'));
});
