import type { EngineDescriptor } from '../descriptor.ts';

export const pythonDescriptor = {
  name: 'python',
  summary: 'your own Python interpreter: your packages, native speed, not isolated',
  snapshotMagic: 'PERENNIAL-PY-SNAPSHOT-',
  // The engine caps the data segment, which imports of numpy and friends already take ~250 MiB of.
  defaultMemoryMb: 2048,
  filesBesideSnapshot: true,
  confined: false,
  takes: { python: true, network: false, workspace: false },
} as const satisfies EngineDescriptor;
