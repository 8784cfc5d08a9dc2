import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { COMMANDS } from '../../src/extension/commands.ts';

describe("the extension's commands", () => {
  it("are the table's, exactly as package.json contributes them", () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      contributes: { commands: Array<{ command: string }> };
    };
    assert.deepEqual(manifest.contributes.commands.map((c) => c.command).sort(), Object.values(COMMANDS).sort());
  });

  it('are named by the table alone: no source of the extension spells a command it contributes', () => {
    const folder = new URL('../../src/extension/', import.meta.url);
    const sources = readdirSync(folder).filter((name) => name.endsWith('.ts') && name !== 'commands.ts');
    assert.ok(sources.includes('machine-commands.ts'), 'the check reads the extension');
    const spelled = sources.flatMap((name) => {
      const text = readFileSync(new URL(name, folder), 'utf8');
      return Object.values(COMMANDS)
        .filter((id) => text.includes(`'${id}'`))
        .map((id) => `${name}: ${id}`);
    });
    assert.deepEqual(spelled, []);
  });
});
