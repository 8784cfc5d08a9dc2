import { spawnSync } from 'node:child_process';
import { pythonCommands } from '../../platform/python-commands.ts';
import { EngineStartError } from '../engine.ts';

/** An interpreter that runs the kernel: its own path (the command's, resolved by Python) and version. */
export interface FoundPython {
  executable: string;
  version: string;
}

/** Prints where the interpreter is and its version; exits 3 when it is too old for the kernel. */
const PROBE = 'import sys; print(sys.executable); print("%d.%d.%d" % sys.version_info[:3]); sys.exit(0 if sys.version_info >= (3, 8) else 3)';
const PROBE_TIMEOUT_MS = 15_000;
/** A search that failed is not repeated sooner: the engine status is read at every machine listing. */
const FAILURE_KEPT_MS = 10_000;

const searches = new Map<string, { found: FoundPython } | { error: string; at: number }>();

/**
 * The interpreter of a python machine: the one it names, else `PERENNIAL_PYTHON`, else the first
 * of this system's commands (`pythonCommands`) that runs Python 3.8 or newer. Throws an
 * `EngineStartError` that says what was tried. Found once per process and name.
 */
export function findPython(named: string | undefined, env: NodeJS.ProcessEnv = process.env): FoundPython {
  const wanted = named || env.PERENNIAL_PYTHON || undefined;
  const key = wanted ?? '';
  const known = searches.get(key);
  if (known && 'found' in known) return known.found;
  if (known && Date.now() - known.at < FAILURE_KEPT_MS) throw new EngineStartError(known.error);
  const tried: string[] = [];
  for (const [command, ...args] of wanted ? [[wanted]] : pythonCommands()) {
    const outcome = probe(command!, args);
    if (typeof outcome !== 'string') {
      searches.set(key, { found: outcome });
      return outcome;
    }
    tried.push(`${[command, ...args].join(' ')}: ${outcome}`);
  }
  const error = wanted
    ? `The Python interpreter ${wanted} cannot run a python machine (${tried[0]}); name another with PERENNIAL_PYTHON or the machine's python option`
    : `No Python 3.8 or newer found for python machines (${tried.join('; ')}); install Python, or name an interpreter with PERENNIAL_PYTHON or the machine's python option`;
  searches.set(key, { error, at: Date.now() });
  throw new EngineStartError(error);
}

/** The interpreter a command starts, or why it is none. */
function probe(command: string, args: string[]): FoundPython | string {
  const run = spawnSync(command, [...args, '-c', PROBE], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS, windowsHide: true });
  if (run.error) return (run.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found' : run.error.message;
  const [executable, version] = run.stdout.trim().split(/\r?\n/);
  if (run.status === 3) return `Python ${version}, older than 3.8`;
  if (run.status !== 0 || !version) return `exit ${run.status ?? run.signal}${run.stderr.trim() ? `, ${run.stderr.trim().split(/\r?\n/).at(-1)}` : ''}`;
  return { executable: executable || command, version };
}
