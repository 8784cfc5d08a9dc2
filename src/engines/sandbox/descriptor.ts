import type { EngineDescriptor } from '../descriptor.ts';

export const sandboxDescriptor = {
  name: 'sandbox',
  summary: 'Pyodide in a locked-down process: isolated, swapped with exact memory snapshots',
  snapshotMagic: 'PERENNIAL-SANDBOX-IMAGE-',
  defaultMemoryMb: 512,
  filesBesideSnapshot: false,
  confined: true,
  takes: { python: false, network: true, workspace: true },
} as const satisfies EngineDescriptor;
