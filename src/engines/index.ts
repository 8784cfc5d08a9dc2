import { join } from 'node:path';
import type { EngineName } from '../shared/requests.ts';
import type { EngineStatus } from '../shared/types.ts';
import type { EngineFactory } from './engine.ts';
import { PythonEngine } from './python/python-engine.ts';
import { pyodideVersion, sandboxChildDir } from './sandbox/sandbox-assets.ts';
import { SandboxEngine } from './sandbox/sandbox-engine.ts';
import { SandboxRuntime } from './sandbox/sandbox-runtime.ts';

/** Default memory cap per engine, in MiB. */
export const DEFAULT_MEMORY_MB: Record<EngineName, number> = {
  // The python engine caps the data segment, which imports of numpy and friends already take ~250 MiB of.
  python: 2048,
  sandbox: 512,
};

/** The engines of one data dir, with what they share (the sandbox's pool and base image). */
export interface EngineSet {
  readonly factories: Partial<Record<EngineName, EngineFactory>>;
  status(): EngineStatus[];
  /** Starts what makes the first machine fast (the sandbox pool). */
  prewarm(): void;
  close(): Promise<void>;
}

export interface EngineSetOptions {
  dataDir: string;
  /** Sandbox processes kept ready with a fresh machine. Default 1. */
  sandboxPoolSize?: number;
  /** The sandbox pools are emptied after this long without a sandbox machine made or swapped in. */
  sandboxPoolIdleSeconds?: number;
}

export function openEngines(options: EngineSetOptions): EngineSet {
  let runtime: SandboxRuntime | undefined;
  const sandbox = () => (runtime ??= new SandboxRuntime({ cacheDir: join(options.dataDir, 'engines', 'sandbox'), poolSize: options.sandboxPoolSize, poolIdleSeconds: options.sandboxPoolIdleSeconds }));
  const sandboxProblem = sandboxUnavailable();
  return {
    factories: {
      python: (engineOptions) => new PythonEngine(engineOptions),
      ...(sandboxProblem ? {} : { sandbox: (engineOptions) => new SandboxEngine(sandbox(), engineOptions) }),
    },
    status() {
      const isolation = sandboxProblem ? null : sandbox().isolation;
      return [
        {
          name: 'sandbox',
          available: !sandboxProblem,
          detail: sandboxProblem ?? `Pyodide ${pyodideVersion()}, ${isolation!.bubblewrap ? 'bubblewrap + ' : ''}Node permission model`,
          warning: isolation?.warning ?? null,
          ready: runtime?.pooled ?? 0,
        },
        { name: 'python', available: true, detail: `the user's interpreter (${process.env.PERENNIAL_PYTHON || 'python3'}), not isolated`, warning: null, ready: 0 },
      ];
    },
    prewarm() {
      if (!sandboxProblem) sandbox().prewarm();
    },
    async close() {
      await runtime?.close();
    },
  };
}

function sandboxUnavailable(): string | null {
  try {
    sandboxChildDir();
    pyodideVersion();
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}
