// Builds the .vsix: the production bundle, with the two packages the local server reads from disk
// at run time (Pyodide's runtime and the zstd wasm) placed beside it in dist/node_modules.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const run = (command, args) => execFileSync(command, args, { cwd: root, stdio: 'inherit' });
run(process.execPath, ['scripts/build.mjs']);

const modules = new URL('dist/node_modules/', root);
rmSync(modules, { recursive: true, force: true });
// Every Pyodide build the sandbox ships (src/engines/sandbox/pyodide-runtimes.ts): machines made on an
// older one keep running on it. Builds up to 0.29 load pyodide.asm.js, later ones pyodide.asm.mjs.
const { dependencies } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
for (const name of Object.keys(dependencies).filter((dependency) => /^pyodide(-|$)/.test(dependency))) {
  const pyodide = new URL(`${name}/`, modules);
  mkdirSync(pyodide, { recursive: true });
  for (const file of ['package.json', 'pyodide.mjs', 'pyodide.asm.js', 'pyodide.asm.mjs', 'pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide-lock.json']) {
    const from = new URL(`node_modules/${name}/${file}`, root);
    if (existsSync(from)) cpSync(from, new URL(file, pyodide));
  }
}
const zstd = new URL('@bokuweb/zstd-wasm/', modules);
mkdirSync(zstd, { recursive: true });
cpSync(new URL('node_modules/@bokuweb/zstd-wasm/package.json', root), new URL('package.json', zstd));
cpSync(new URL('node_modules/@bokuweb/zstd-wasm/dist/common/', root), new URL('dist/common/', zstd), {
  recursive: true,
  filter: (path) => !path.endsWith('.map'),
});

const { name, version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const out = `${name}-${version}.vsix`;
// Dependencies are bundled (or copied above); the README's images stay relative.
run(new URL('node_modules/.bin/vsce', root).pathname, ['package', '--no-dependencies', '--no-rewrite-relative-links', '--out', out]);
console.log(`${out}: ${(statSync(new URL(out, root)).size / 1024 / 1024).toFixed(1)} MiB`);
