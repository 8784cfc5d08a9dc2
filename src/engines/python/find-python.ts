import { probePython, pythonCommands, type FoundPython } from '../../platform/python-commands.ts';
import { EngineStartError } from '../engine.ts';
/** A search that failed is not repeated sooner: the engine status is read at every machine listing. */
const FAILURE_KEPT_MS = 10_000;

interface Search {
  running: Promise<FoundPython>;
  /** Once it has ended. */
  outcome?: { found: FoundPython } | { error: string; at: number };
}

const searches = new Map<string, Search>();

/**
 * The interpreter of a python machine: the one it names, else `PERENNIAL_PYTHON`, else the first
 * of this system's commands (`pythonCommands`) that runs Python 3.8 or newer. Rejects with an
 * `EngineStartError` that says what was tried. Found once per process and name, without holding
 * up the server meanwhile (the `py` launcher alone takes a while to start).
 */
export function findPython(named: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<FoundPython> {
  const wanted = named || env.PERENNIAL_PYTHON || undefined;
  const key = wanted ?? '';
  const known = searches.get(key);
  const stale = known?.outcome && 'error' in known.outcome && Date.now() - known.outcome.at >= FAILURE_KEPT_MS;
  if (known && !stale) return known.running;
  const search: Search = { running: look(wanted) };
  search.running.then(
    (found) => (search.outcome = { found }),
    (error: Error) => (search.outcome = { error: error.message, at: Date.now() }),
  );
  searches.set(key, search);
  return search.running;
}

/** What `findPython` found for machines that name no interpreter, or why none; undefined while it looks (it starts looking). */
export function defaultPython(env: NodeJS.ProcessEnv = process.env): { found: FoundPython } | { error: string } | undefined {
  findPython(undefined, env).catch(() => {});
  return searches.get(env.PERENNIAL_PYTHON || '')?.outcome;
}

async function look(wanted: string | undefined): Promise<FoundPython> {
  const tried: string[] = [];
  for (const [command, ...args] of wanted ? [[wanted]] : pythonCommands()) {
    const outcome = await probePython(command!, args);
    if (typeof outcome !== 'string') return outcome;
    tried.push(`${[command, ...args].join(' ')}: ${outcome}`);
  }
  throw new EngineStartError(
    wanted
      ? `The Python interpreter ${wanted} cannot run a python machine (${tried[0]}); name another with PERENNIAL_PYTHON or the machine's python option`
      : `No Python 3.8 or newer found for python machines (${tried.join('; ')}); install Python, or name an interpreter with PERENNIAL_PYTHON or the machine's python option`,
  );
}
