/**
 * `npm run bench [-- python|sandbox|interrupts|server|team|footprint|checkpoints|mcp-app|jupyter|notebooks|load|cluster|cluster-faults]`: prints every benchmark's figures (or the named ones).
 * `notebooks` runs only when named: it needs a corpus fetched first and takes about an hour; `load`
 * (agents at once) too: it takes several minutes and much of the machine; and `cluster` and
 * `cluster-faults` (nodes killed, paused and stopped at random), which start PostgreSQL and an
 * S3-compatible bucket (s3rver) beside their nodes.
 * `--node VERSION` runs them on that Node build (from the npm registry, cached in .cache/node), as
 * the servers they start: VS Code's extension host runs Node 22 or 24, not this one.
 * Figures go in bench/RESULTS.md.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { benchCheckpoints } from './checkpoints.ts';
import { benchCluster } from './cluster.ts';
import { benchClusterFaults } from './cluster-faults.ts';
import { benchFootprint } from './footprint.ts';
import { benchInterrupts } from './interrupts.ts';
import { benchJupyter } from './jupyter.ts';
import { benchLoad } from './load.ts';
import { benchMcpApp } from './mcp-app.ts';
import { benchNotebooks } from './notebooks.ts';
import { benchPythonEngine } from './python-engine.ts';
import { benchSandboxEngine } from './sandbox-engine.ts';
import { benchServer } from './server.ts';
import { benchTeam } from './team.ts';

const suites: Record<string, () => Promise<void>> = {
  python: benchPythonEngine,
  sandbox: benchSandboxEngine,
  interrupts: benchInterrupts,
  server: benchServer,
  team: benchTeam,
  footprint: benchFootprint,
  checkpoints: benchCheckpoints,
  'mcp-app': benchMcpApp,
  jupyter: benchJupyter,
};
const namedOnly: Record<string, () => Promise<void>> = {
  notebooks: benchNotebooks,
  load: benchLoad,
  cluster: benchCluster,
  'cluster-faults': benchClusterFaults,
};

const nodeAt = process.argv.indexOf('--node');
if (nodeAt > 0) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const node = execFileSync('bash', ['scripts/node-line.sh', process.argv[nodeAt + 1] ?? '', '.cache/node'], { cwd: root, encoding: 'utf8' }).trim();
  const rest = process.argv.slice(2).filter((_, i) => i !== nodeAt - 2 && i !== nodeAt - 1);
  process.exit(spawnSync(node, ['--import', 'tsx', fileURLToPath(import.meta.url), ...rest], { cwd: root, stdio: 'inherit' }).status ?? 1);
}

const chosen = process.argv.slice(2).filter((a) => a in suites || a in namedOnly);

console.log(`Perennial benchmarks — node ${process.version}, ${new Date().toISOString()}`);
for (const [name, suite] of Object.entries(suites)) {
  if (!chosen.length || chosen.includes(name)) await suite();
}
for (const [name, suite] of Object.entries(namedOnly)) {
  if (chosen.includes(name)) await suite();
}
