// Bundles the CLI with esbuild and ships the Python kernel beside it.
import { build } from 'esbuild';
import { copyFile, mkdir, chmod } from 'node:fs/promises';

const outdir = new URL('../dist/', import.meta.url);
await mkdir(outdir, { recursive: true });

await build({
  entryPoints: { cli: 'src/cli/index.ts' },
  outdir: outdir.pathname,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  logLevel: 'warning',
});
await copyFile(new URL('../src/kernel/perennial_kernel.py', import.meta.url), new URL('perennial_kernel.py', outdir));
await chmod(new URL('cli.js', outdir), 0o755);
