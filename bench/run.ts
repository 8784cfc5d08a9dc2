/**
 * `npm run bench [-- python|sandbox|interrupts|server|footprint|checkpoints]`: prints every benchmark's figures (or the named ones).
 * Figures go in bench/RESULTS.md.
 */
import { benchCheckpoints } from './checkpoints.ts';
import { benchFootprint } from './footprint.ts';
import { benchInterrupts } from './interrupts.ts';
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
};
const chosen = process.argv.slice(2).filter((a) => a in suites);

console.log(`Perennial benchmarks — node ${process.version}, ${new Date().toISOString()}`);
for (const [name, suite] of Object.entries(suites)) {
  if (!chosen.length || chosen.includes(name)) await suite();
}
