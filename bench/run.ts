/**
 * `npm run bench [-- python|sandbox|interrupts|server|footprint|checkpoints|mcp-app|notebooks]`: prints every benchmark's figures (or the named ones).
 * `notebooks` runs only when named: it needs a corpus fetched first and takes about an hour.
 * Figures go in bench/RESULTS.md.
 */
import { benchCheckpoints } from './checkpoints.ts';
import { benchFootprint } from './footprint.ts';
import { benchInterrupts } from './interrupts.ts';
import { benchMcpApp } from './mcp-app.ts';
import { benchNotebooks } from './notebooks.ts';
import { benchPythonEngine } from './python-engine.ts';
import { benchSandboxEngine } from './sandbox-engine.ts';
import { benchServer } from './server.ts';

const suites: Record<string, () => Promise<void>> = {
  python: benchPythonEngine,
  sandbox: benchSandboxEngine,
  interrupts: benchInterrupts,
  server: benchServer,
  footprint: benchFootprint,
  checkpoints: benchCheckpoints,
  'mcp-app': benchMcpApp,
};
const namedOnly: Record<string, () => Promise<void>> = { notebooks: benchNotebooks };
const chosen = process.argv.slice(2).filter((a) => a in suites || a in namedOnly);

console.log(`Perennial benchmarks — node ${process.version}, ${new Date().toISOString()}`);
for (const [name, suite] of Object.entries(suites)) {
  if (!chosen.length || chosen.includes(name)) await suite();
}
for (const [name, suite] of Object.entries(namedOnly)) {
  if (chosen.includes(name)) await suite();
}
