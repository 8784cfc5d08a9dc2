import { join } from 'node:path';
import type { EngineStatus } from '../../shared/types.ts';
import type { EngineRuntime, EngineSetOptions } from '../engine-runtime.ts';
import { pythonDescriptor } from './descriptor.ts';
import { defaultPython, findPython } from './find-python.ts';
import { KernelProcesses } from './kernel-processes.ts';
import { PythonEngine } from './python-engine.ts';

/** The python engine for a data dir: kernel processes, and a pool of them per interpreter. */
export function pythonInDataDir(options: EngineSetOptions): EngineRuntime {
  const pythonDir = join(options.dataDir, 'engines', 'python');
  const kernels = new KernelProcesses({
    bytecodeDir: join(pythonDir, 'bytecode'),
    poolDir: join(pythonDir, 'ready'),
    poolIdleSeconds: options.poolIdleSeconds,
  });
  // Looked for now, so that the status has it by the time it is asked for.
  findPython(undefined).catch(() => {});
  return {
    name: pythonDescriptor.name,
    factory: (engineOptions) => new PythonEngine(engineOptions, kernels),
    status: () => ({ ...pythonStatus(), ready: kernels.ready }),
    newestRuntime: () => undefined,
    snapshotRuntime: async () => undefined,
    async assertStartable({ python }) {
      await findPython(python);
    },
    prewarm() {
      findPython(undefined).then(
        (found) => kernels.prewarm(found.executable),
        () => {},
      );
    },
    close: () => kernels.close(),
  };
}

/** Machines that name no interpreter run the one found here; those that name one, theirs. */
function pythonStatus(): EngineStatus {
  const known = defaultPython();
  const status = { name: pythonDescriptor.name, warning: null, ready: 0 };
  if (!known) return { ...status, available: false, detail: 'looking for a Python interpreter' };
  if ('error' in known) return { ...status, available: false, detail: known.error };
  const { executable, version } = known.found;
  return { ...status, available: true, detail: `the user's interpreter (Python ${version}, ${executable}), not isolated` };
}
