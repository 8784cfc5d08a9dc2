// The project's Python, held to a formatter and a linter as its TypeScript is: Ruff, from its
// WebAssembly build on npm (no Python package to install). Checks every .py file of the
// kernel, the benchmarks and the test fixtures written by hand; `--write` formats them (the
// findings are fixed by hand: the WebAssembly build does not say which fixes are safe). Exits 1
// when a file is not formatted or has a finding.
import { PositionEncoding, Workspace } from '@astral-sh/ruff-wasm-nodejs';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const FOLDERS = ['src', 'bench', 'test'];
// Earlier builds' kernels and data dirs, and others' test suites (test/vendor), kept as they were written.
const KEPT_AS_WRITTEN = new Set(['test/fixtures/builds', 'test/fixtures/data-dirs', 'test/vendor', 'node_modules']);

const settings = {
  // The kernel runs on the person's interpreter, from Python 3.8: newer syntax is a finding.
  'target-version': 'py38',
  'line-length': 120,
  lint: {
    select: ['E', 'W', 'F', 'I', 'B', 'UP', 'C4', 'PIE', 'RUF', 'PLE'],
    // Long lines are the formatter's to break; what it leaves (a long string, a URL) stays.
    ignore: ['E501'],
  },
};

function pythonFiles(folder) {
  const found = [];
  for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory() && !KEPT_AS_WRITTEN.has(path) && entry.name !== '__pycache__') found.push(...pythonFiles(path));
    else if (entry.isFile() && entry.name.endsWith('.py')) found.push(path);
  }
  return found;
}

const write = process.argv.includes('--write');
const workspace = new Workspace(settings, PositionEncoding.Utf16);
let problems = 0;
for (const file of FOLDERS.flatMap(pythonFiles)) {
  const source = readFileSync(join(root, file), 'utf8');
  let text = source;
  if (write) {
    text = workspace.format(text);
    if (text !== source) writeFileSync(join(root, file), text);
  } else if (workspace.format(text) !== text) {
    console.log(`${file}: not formatted (npm run format)`);
    problems++;
  }
  for (const diagnostic of workspace.check(text)) {
    const { row, column } = diagnostic.start_location;
    console.log(`${relative(root, join(root, file))}:${row}:${column}: ${diagnostic.code ?? 'syntax'} ${diagnostic.message}`);
    problems++;
  }
}
if (problems) {
  console.log(`Python: ${problems} problem${problems === 1 ? '' : 's'} (Ruff ${Workspace.version()})`);
  process.exit(1);
}
