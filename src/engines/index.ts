import { join } from 'node:path';
import type { EngineName } from '../shared/requests.ts';
import type { EngineStatus, MachineRuntime } from '../shared/types.ts';
import { readImageHeaderFile } from './sandbox/machine-image-file.ts';
import type { EngineFactory } from './engine.ts';
import type { BaseImageShelf } from './base-image-shelf.ts';
import { defaultPython, findPython } from './python/find-python.ts';
import { KernelProcesses } from './python/kernel-processes.ts';
import { PythonEngine } from './python/python-engine.ts';
import { CURRENT_PYODIDE, installedPyodideVersion, pyodideRuntime, pyodideRuntimes, type PyodideRuntime } from './sandbox/pyodide-runtimes.ts';
import { sandboxChildDir } from './sandbox/sandbox-assets.ts';
import { SandboxEngine, type SandboxRuntimes } from './sandbox/sandbox-engine.ts';
import { defaultPackageSource, SandboxRuntime } from './sandbox/sandbox-runtime.ts';

/** The engines of one data dir, with what they share (the sandbox's pool and base image). */
export interface EngineSet {
  readonly factories: Partial<Record<EngineName, EngineFactory>>;
  status(): EngineStatus[];
  /** The newest runtime an engine's machines can be upgraded to; none where the user chose it (python). */
  newestRuntime(engine: EngineName): MachineRuntime | undefined;
  /** What the snapshot file at `path` runs on, when its engine can tell without loading it. */
  snapshotRuntime(engine: EngineName, path: string): Promise<MachineRuntime | undefined>;
  /** Throws what would keep a machine of `engine` with these options from starting, before it is made. */
  assertStartable(engine: EngineName, options: { python?: string }): Promise<void>;
  /** Starts what makes the first machine fast (the sandbox pool). */
  prewarm(): void;
  close(): Promise<void>;
}

export interface EngineSetOptions {
  dataDir: string;
  /** Sandbox processes kept ready, Pyodide booted ahead, for new machines and swap-ins. Default 1. */
  sandboxPoolSize?: number;
  /** A pool (the sandbox's, an interpreter's) is emptied after this long without a machine of it made or swapped in. Default 300 s. */
  poolIdleSeconds?: number;
  /** The Pyodide build new sandbox machines run and upgrades go to; default the newest (benchmarks compare builds with it). */
  sandboxPyodide?: PyodideRuntime;
  /** Where sandbox base images are shared with other nodes (a cluster's). */
  baseImages?: BaseImageShelf;
}

export function openEngines(options: EngineSetOptions): EngineSet {
  const newest = options.sandboxPyodide ?? CURRENT_PYODIDE;
  const made = new Map<string, SandboxRuntime>();
  const runtimeOf = (pyodide: PyodideRuntime): SandboxRuntime => {
    let runtime = made.get(pyodide.version);
    if (!runtime) {
      const current = pyodide === newest;
      runtime = new SandboxRuntime({
        cacheDir: join(options.dataDir, 'engines', 'sandbox', pyodide.cacheFolder),
        pyodide,
        packageSource: defaultPackageSource(pyodide, current),
        // Machines of older builds are few: they start a process each, with no pool kept for them.
        poolSize: current ? options.sandboxPoolSize : 0,
        poolIdleSeconds: options.poolIdleSeconds,
        baseImages: options.baseImages,
      });
      made.set(pyodide.version, runtime);
    }
    return runtime;
  };
  const runtimes: SandboxRuntimes = {
    current: () => runtimeOf(newest),
    of: (version) => {
      const pyodide = pyodideRuntime(version);
      return pyodide && runtimeOf(pyodide);
    },
    versions: pyodideRuntimes().map((r) => r.version),
  };
  const pythonDir = join(options.dataDir, 'engines', 'python');
  const kernels = new KernelProcesses({
    bytecodeDir: join(pythonDir, 'bytecode'),
    poolDir: join(pythonDir, 'ready'),
    poolIdleSeconds: options.poolIdleSeconds,
  });
  const sandboxProblem = sandboxUnavailable();
  // Looked for now, so that the status has it by the time it is asked for.
  findPython(undefined).catch(() => {});
  const older = pyodideRuntimes().slice(pyodideRuntimes().indexOf(newest) + 1);
  return {
    factories: {
      python: (engineOptions) => new PythonEngine(engineOptions, kernels),
      ...(sandboxProblem ? {} : { sandbox: (engineOptions) => new SandboxEngine(runtimes, engineOptions) }),
    },
    status() {
      const isolation = sandboxProblem ? null : runtimes.current().isolation;
      const kept = older.length ? `; machines made on ${older.map((r) => `Pyodide ${r.version}`).join(' or ')} stay on it until upgraded` : '';
      return [
        {
          name: 'sandbox',
          available: !sandboxProblem,
          detail:
            sandboxProblem ??
            `Pyodide ${newest.version} (Python ${newest.python}), ${isolation!.bubblewrap ? 'bubblewrap + ' : ''}Node permission model${kept}`,
          warning: isolation?.warning ?? null,
          ready: made.get(newest.version)?.pooled ?? 0,
        },
        { ...pythonStatus(), ready: kernels.ready },
      ];
    },
    newestRuntime(engine) {
      return engine === 'sandbox' ? { python: newest.python, pyodide: newest.version } : undefined;
    },
    async snapshotRuntime(engine, path) {
      if (engine !== 'sandbox') return undefined;
      const pyodide = pyodideRuntime((await readImageHeaderFile(path)).pyodideVersion);
      return pyodide && { python: pyodide.python, pyodide: pyodide.version };
    },
    async assertStartable(engine, { python }) {
      if (engine === 'python') await findPython(python);
    },
    prewarm() {
      if (!sandboxProblem) runtimes.current().prewarm();
      findPython(undefined).then(
        (found) => kernels.prewarm(found.executable),
        () => {},
      );
    },
    async close() {
      await Promise.all([kernels.close(), ...[...made.values()].map((runtime) => runtime.close())]);
    },
  };
}

/** Machines that name no interpreter run the one found here; those that name one, theirs. */
function pythonStatus(): EngineStatus {
  const known = defaultPython();
  const status = { name: 'python' as const, warning: null, ready: 0 };
  if (!known) return { ...status, available: false, detail: 'looking for a Python interpreter' };
  if ('error' in known) return { ...status, available: false, detail: known.error };
  const { executable, version } = known.found;
  return { ...status, available: true, detail: `the user's interpreter (Python ${version}, ${executable}), not isolated` };
}

function sandboxUnavailable(): string | null {
  try {
    sandboxChildDir();
    for (const runtime of pyodideRuntimes()) {
      const installed = installedPyodideVersion(runtime);
      // Snapshots record the version Pyodide reports: a different one would strand every machine.
      if (installed !== runtime.version)
        return `the package ${runtime.packageName} is Pyodide ${installed}, not the ${runtime.version} this build was made for (reinstall Perennial)`;
    }
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}
