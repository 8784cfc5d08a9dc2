import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Not the project's own files: installed, built or cached. */
const OUTSIDE = new Set(['node_modules', '.cache', 'dist', '.git', '.data']);
/** Not read: records of what was, which may name files since gone, what earlier builds wrote, and others' code (vendored). */
const NOT_READ = [/^CHANGELOG\.md$/, /^bench\/RESULTS\.md$/, /^test\/fixtures\//, /^test\/vendor\/(?!README\.md$)/];
/** Written when something runs. */
const WRITTEN_BY_RUNS = /^bench\/out\//;
/** A path or file name with one of the project's source extensions. */
const FILE_NAME = /(?<![\w./-])((?:\.{0,2}[\w-]*\/)*[\w-]+\.(?:ts|mjs|py|sh|md))(?![\w/(])/g;

function projectFiles(folder = ''): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    if (OUTSIDE.has(entry.name)) return [];
    const path = folder ? `${folder}/${entry.name}` : entry.name;
    return entry.isDirectory() ? projectFiles(path) : [path];
  });
}

/** The prose of a file: a document whole; of a source file, its comment lines (docstrings are not read). */
function prose(path: string, text: string): string {
  if (path.endsWith('.md')) return text;
  const comment = path.endsWith('.py') || path.endsWith('.sh') ? /^\s*#(.*)$/ : /^\s*(?:\/\/|\/\*\*?|\*)(.*)$/;
  return text
    .split('\n')
    .map((line) => comment.exec(line)?.[1] ?? '')
    .join('\n');
}

describe('documents and comments', () => {
  it('name only files that exist', () => {
    const files = projectFiles();
    const paths = new Set(files);
    const names = new Set(files.map((path) => basename(path)));
    // Files of the Pyodide build the sandbox runs, which comments explain.
    for (const name of readdirSync(join(ROOT, 'node_modules/pyodide'))) names.add(name);
    const exists = (named: string, from: string) => {
      if (!named.includes('/')) return names.has(named);
      const relative = [normalize(named), normalize(join(dirname(from), named))];
      return WRITTEN_BY_RUNS.test(named) || relative.some((path) => paths.has(path)) || files.some((path) => path.endsWith(`/${named}`));
    };
    const missing = files
      .filter((path) => !NOT_READ.some((pattern) => pattern.test(path)) && /\.(md|ts|mjs|py|sh)$/.test(path))
      .flatMap((path) => [...prose(path, readFileSync(join(ROOT, path), 'utf8')).matchAll(FILE_NAME)].map((match) => ({ path, named: match[1]! })))
      .filter(({ path, named }) => !exists(named, path))
      .map(({ path, named }) => `${path} names ${named}`);
    assert.deepEqual([...new Set(missing)], []);
  });
});
