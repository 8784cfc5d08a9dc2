import { join } from 'node:path';
import type { EngineRuntime, EngineSetOptions } from '../engine-runtime.ts';
import { readImageHeaderFile } from './machine-image-file.ts';
import { CURRENT_PYODIDE, installedPyodideVersion, pyodideRuntime, pyodideRuntimes, type PyodideRuntime } from './pyodide-runtimes.ts';
import { sandboxChildDir } from './sandbox-assets.ts';
import { SandboxEngine, type SandboxRuntimes } from './sandbox-engine.ts';
import { defaultPackageSource, SandboxRuntime } from './sandbox-runtime.ts';
import { sandboxDescriptor } from './descriptor.ts';

/** The sandbox engine for a data dir: a runtime per Pyodide build its machines run on, made as they are needed. */
export function sandboxInDataDir(options: EngineSetOptions): EngineRuntime {
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
  const problem = sandboxUnavailable();
  const older = pyodideRuntimes().slice(pyodideRuntimes().indexOf(newest) + 1);
  return {
    name: sandboxDescriptor.name,
    ...(problem ? {} : { factory: (engineOptions) => new SandboxEngine(runtimes, engineOptions) }),
    status() {
      const isolation = problem ? null : runtimes.current().isolation;
      const kept = older.length ? `; machines made on ${older.map((r) => `Pyodide ${r.version}`).join(' or ')} stay on it until upgraded` : '';
      return {
        name: sandboxDescriptor.name,
        available: !problem,
        detail: problem ?? `Pyodide ${newest.version} (Python ${newest.python}), ${isolation!.bubblewrap ? 'bubblewrap + ' : ''}Node permission model${kept}`,
        warning: isolation?.warning ?? null,
        ready: made.get(newest.version)?.pooled ?? 0,
      };
    },
    newestRuntime: () => ({ python: newest.python, pyodide: newest.version }),
    async snapshotRuntime(path) {
      const pyodide = pyodideRuntime((await readImageHeaderFile(path)).pyodideVersion);
      return pyodide && { python: pyodide.python, pyodide: pyodide.version };
    },
    assertStartable: async () => {},
    prewarm() {
      if (!problem) runtimes.current().prewarm();
    },
    async close() {
      await Promise.all([...made.values()].map((runtime) => runtime.close()));
    },
  };
}

/** Why sandbox machines cannot run here (the sandbox not built, a Pyodide package not the one built for), or null. */
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
