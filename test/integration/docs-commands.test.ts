/**
 * Every `perennial` command in the docs' shell blocks is one the CLI has, with flags it takes: the
 * CLI's own help is the judge, so a renamed command or flag fails here before a reader meets it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = join(ROOT, 'dist', 'cli.js');
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((name) => join('docs', name))];

/** The `perennial ...` lines of a file's ```sh blocks, each with what continues it on indented lines. */
function commandLines(text: string): string[] {
  const found: string[] = [];
  for (const [, block] of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const raw of block!.split('\n')) {
      const line = raw.replace(/\s+#.*$/, '');
      if (line.startsWith('perennial ')) found.push(line.trim());
      else if (/^\s+\S/.test(line) && found.length && /^\s+[[-]/.test(line)) found[found.length - 1] += ` ${line.trim()}`;
    }
  }
  return found;
}

const help = new Map<string, string>();
function helpOf(command: string[]): string {
  const key = command.join(' ');
  if (!help.has(key)) help.set(key, execFileSync(process.execPath, [CLI, ...command, '--help'], { encoding: 'utf8' }));
  return help.get(key)!;
}

/** Whether `word` is a subcommand of `command` (a group, such as machine or team key); a subcommand also takes its groups' flags. */
function isSubcommand(command: string[], word: string): boolean {
  const text = helpOf(command);
  return (
    !word.startsWith('-') &&
    /^Commands:/m.test(text) &&
    new RegExp(`^  ${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'm').test(text.slice(text.search(/^Commands:/m)))
  );
}

describe("the docs' perennial commands, against the CLI's help", () => {
  for (const doc of DOCS) {
    const lines = commandLines(readFileSync(join(ROOT, doc), 'utf8'));
    if (!lines.length) continue;
    it(`${doc}: ${lines.length} command lines`, () => {
      const global = helpOf([]);
      for (const line of lines) {
        const words = line.split(/\s+/).slice(1);
        // Global options come before the command: --data-dir DIR, --backend NAME.
        while (words[0]?.startsWith('--')) words.splice(0, global.includes(`${words[0]} <`) ? 2 : 1);
        // Down the groups (machine share, team key create) while the next word is a subcommand.
        const command = words.slice(0, 1);
        while (words[command.length] && isSubcommand(command, words[command.length]!)) command.push(words[command.length]!);
        assert.ok(isSubcommand(command.slice(0, -1), command.at(-1)!), `${doc}: no command "${command.join(' ')}" in: ${line}`);
        const own = command.map((_, i) => helpOf(command.slice(0, i + 1))).join('');
        for (const [flag] of line.matchAll(/--[a-z][a-z-]*/g)) {
          assert.ok(
            own.includes(`${flag} `) || own.includes(`${flag}\n`) || global.includes(`${flag} `),
            `${doc}: perennial ${command.join(' ')} takes no ${flag} (in: ${line})`,
          );
        }
      }
    });
  }
});
