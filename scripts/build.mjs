// Bundles the CLI, the sandbox process and the VS Code extension with esbuild, and ships the
// Python kernel beside them.
import { build } from 'esbuild';
import { copyFile, mkdir, chmod, readdir, rm } from 'node:fs/promises';

const outdir = new URL('../dist/', import.meta.url);
await mkdir(outdir, { recursive: true });

// Names kept: an error's name is its class's (CodedError), which the bundle must not rename.
// Whitespace and comments go: V8 keeps a module's source in memory for as long as the process
// lives, and one character beyond Latin-1 in a comment made it keep all of it at two bytes a
// character (4.3 MB in every server).
const common = {
  outdir: outdir.pathname,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  keepNames: true,
  minifyWhitespace: true,
  minifySyntax: true,
  charset: 'ascii',
};

await build({
  ...common,
  entryPoints: { cli: 'src/cli/index.ts' },
  // Both read files beside themselves at run time (wasm, the Python runtime): keep them packages.
  external: ['pyodide', '@bokuweb/zstd-wasm'],
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
});
// The sandbox process. Pyodide itself stays a package on disk, read by the process at run time.
await build({
  ...common,
  entryPoints: { 'sandbox/main': 'src/engines/sandbox/child/main.ts' },
});
// The VS Code extension: CommonJS, as the extension host loads it; `vscode` is the host's own.
await build({
  ...common,
  format: 'cjs',
  entryPoints: { extension: 'src/extension/extension.ts' },
  outExtension: { '.js': '.cjs' },
  external: ['vscode'],
  define: { 'import.meta.url': '__importMetaUrl' },
  banner: { js: "const __importMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
});
// The kernel package: its modules only (a python engine run from src/ leaves __pycache__ beside them).
const kernelSource = new URL('../src/kernel/perennial_kernel/', import.meta.url);
const kernelOut = new URL('perennial_kernel/', outdir);
await rm(new URL('perennial_kernel.py', outdir), { force: true });
await rm(kernelOut, { recursive: true, force: true });
await mkdir(kernelOut);
for (const name of (await readdir(kernelSource)).filter((n) => n.endsWith('.py'))) await copyFile(new URL(name, kernelSource), new URL(name, kernelOut));
await chmod(new URL('cli.js', outdir), 0o755);
