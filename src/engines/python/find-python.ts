import { execFile } from 'node:child_process';
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
    const outcome = await probe(command!, args);
    if (typeof outcome !== 'string') return outcome;
    tried.push(`${[command, ...args].join(' ')}: ${outcome}`);
  }
  throw new EngineStartError(
    wanted
      ? `The Python interpreter ${wanted} cannot run a python machine (${tried[0]}); name another with PERENNIAL_PYTHON or the machine's python option`
      : `No Python 3.8 or newer found for python machines (${tried.join('; ')}); install Python, or name an interpreter with PERENNIAL_PYTHON or the machine's python option`,
  );
}

/** The interpreter a command starts, or why it is none. */
function probe(command: string, args: string[]): Promise<FoundPython | string> {
  return new Promise((resolve) => {
    execFile(command, [...args, '-c', PROBE], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (error, stdout, stderr) => {
      const [executable, version] = stdout.trim().split(/\r?\n/);
      // A string where the command could not run (ENOENT), its exit status where it ran.
      const code = (error as { code?: unknown } | null)?.code;
      if (code === 'ENOENT') return resolve('not found');
      if (code === 3) return resolve(`Python ${version}, older than 3.8`);
      if (error || !version) {
        const last = stderr.trim().split(/\r?\n/).at(-1);
        return resolve(`${typeof code === 'number' ? `exit ${code}` : (error?.message.split('\n')[0] ?? 'no version')}${last ? `, ${last}` : ''}`);
      }
      resolve({ executable: executable || command, version });
    });
  });
}
