import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ENGINE_NAMES, ENGINES } from '../../src/engines/descriptors.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/**
 * An engine's name used as one: compared with, a case of a switch, a list of engines, a value given
 * as an engine. (`'python'` is also a language and an option's name, which are not engines.)
 */
function engineUses(text: string): string[] {
  const name = `'(?:${ENGINE_NAMES.join('|')})'`;
  const patterns = [`[=!]==\\s*${name}`, `${name}\\s*[=!]==`, `case\\s+${name}`, `\\[\\s*${name}\\s*,\\s*${name}`, `engine\\s*:\\s*${name}`];
  return patterns.flatMap((pattern) => [...text.matchAll(new RegExp(pattern, 'g'))].map((match) => match[0]));
}

describe("the engines' registry", () => {
  it('is where engines are named: no source outside src/engines/ spells an engine', () => {
    const found = sources(join(ROOT, 'src'))
      .filter((file) => !relative(ROOT, file).startsWith(join('src', 'engines')))
      .flatMap((file) => engineUses(readFileSync(file, 'utf8')).map((use) => `${relative(ROOT, file)}: ${use}`));
    assert.deepEqual(found, []);
  });

  it('finds what it looks for (the check above can fail)', () => {
    assert.deepEqual(engineUses("if (engine === 'python') x(); const all = ['sandbox', 'python']; f({ engine: 'sandbox' }); switch (e) { case 'sandbox': }"), [
      "=== 'python'",
      "case 'sandbox'",
      "['sandbox', 'python'",
      "engine: 'sandbox'",
    ]);
    assert.deepEqual(engineUses("registerCodeLensProvider({ language: 'python' }); query.set('python', path)"), []);
  });

  it("is what VS Code's defaultEngine setting offers, in its order, each with its summary", () => {
    const setting = (
      JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
        contributes: { configuration: { properties: Record<string, { enum: string[]; default: string; enumDescriptions: string[] }> } };
      }
    ).contributes.configuration.properties['perennial.defaultEngine']!;
    assert.deepEqual(setting.enum, ENGINE_NAMES);
    assert.equal(setting.default, ENGINE_NAMES[0]);
    assert.deepEqual(
      setting.enumDescriptions,
      ENGINES.map(({ summary }) => `${summary[0]!.toUpperCase()}${summary.slice(1)}.`),
    );
  });
});
