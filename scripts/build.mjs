// Bundles the CLI, the sandbox process and the VS Code extension with esbuild, and ships the
// Python kernel beside them, and the sandbox's base image (scripts/ship-base.ts).
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFile, mkdir, chmod, readdir, rm, writeFile } from 'node:fs/promises';

const outdir = new URL('../dist/', import.meta.url);
await mkdir(outdir, { recursive: true });
// The CLI's chunks are named by their content: an earlier build's would stay beside today's.
for (const name of await readdir(outdir)) if (/^cli-.*\.js(\.map)?$/.test(name)) await rm(new URL(name, outdir));

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
  // A cluster node's code (PostgreSQL's and S3's clients) is a chunk of its own, loaded only by a
  // node. Chunks sit beside cli.js: code finds its files (the kernel, the view) from its own URL.
  splitting: true,
  chunkNames: 'cli-[name]-[hash]',
  // Both read files beside themselves at run time (wasm, the Python runtime): keep them packages.
  // pg's optional native binding is never used.
  external: ['pyodide', '@bokuweb/zstd-wasm', 'pg-native'],
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
});
// The sandbox process. Pyodide itself stays a package on disk, read by the process at run time.
await build({
  ...common,
  entryPoints: { 'sandbox/main': 'src/engines/sandbox/child/main.ts', 'sandbox/patch-thread': 'src/engines/sandbox/child/patch-thread.ts' },
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
// The MCP App's view: one page with its script and style inline, as a host's sandboxed frame loads
// nothing else. Its Content Security Policy allows those two by hash, images from data: URIs, and
// nothing more.
const view = async (entry, loader) => {
  const { outputFiles } = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    charset: 'ascii',
    loader,
    logLevel: 'warning',
  });
  return outputFiles[0].text.trim();
};
const script = await view('src/view/main.ts');
const style = await view('src/view/view.css', { '.css': 'css' });
if (/<\/(script|style)/i.test(script + style)) throw new Error('The view would end its own inline script or style early');
const sha = (text) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
const csp = `default-src 'none'; script-src ${sha(script)}; style-src ${sha(style)}; img-src data:; base-uri 'none'; form-action 'none'`;
await mkdir(new URL('view/', outdir), { recursive: true });
await writeFile(
  new URL('view/machine.html', outdir),
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<meta http-equiv="Content-Security-Policy" content="${csp}"><title>Perennial</title><style>${style}</style></head>` +
    `<body><script>${script}</script></body></html>`,
);
// The notebook renderer of ipywidgets (VS Code loads it into a notebook's output page as an ES
// module): ipywidgets' controls bundled, their style sheets (fonts inline) in the script, so that
// it fetches nothing. The libraries' own CSS imports are left out: the renderer adds the sheet
// of the line a widget is of (src/widgets/styles.ts).
const fonts = { '.css': 'css', '.woff2': 'dataurl', '.woff': 'dataurl', '.ttf': 'dataurl', '.eot': 'dataurl', '.svg': 'dataurl', '.png': 'dataurl' };
const WIDGET_STYLES = { 7: await view('src/widgets/widgets-7.css', fonts), 8: await view('src/widgets/widgets-8.css', fonts) };
await build({
  entryPoints: { 'widgets/renderer': 'src/widgets/renderer.ts' },
  outdir: outdir.pathname,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  minify: true,
  charset: 'ascii',
  logLevel: 'warning',
  loader: { '.css': 'empty', '.svg': 'text' },
  define: { WIDGET_STYLES: JSON.stringify(WIDGET_STYLES), 'process.env.NODE_ENV': '"production"' },
  // html-manager's embedding code sets webpack's asset path, which no page here has.
  banner: { js: 'var __webpack_public_path__ = "";' },
});
// The kernel package: its modules only (a python engine run from src/ leaves __pycache__ beside them).
const kernelSource = new URL('../src/kernel/perennial_kernel/', import.meta.url);
const kernelOut = new URL('perennial_kernel/', outdir);
await rm(new URL('perennial_kernel.py', outdir), { force: true });
await rm(kernelOut, { recursive: true, force: true });
await mkdir(kernelOut);
for (const name of (await readdir(kernelSource)).filter((n) => n.endsWith('.py'))) await copyFile(new URL(name, kernelSource), new URL(name, kernelOut));
await chmod(new URL('cli.js', outdir), 0o755);
// Made from the sandbox process and kernel just built, so it goes last.
execFileSync(process.execPath, ['--import', 'tsx', new URL('ship-base.ts', import.meta.url).pathname], { stdio: 'inherit' });
