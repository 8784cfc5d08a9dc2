import { OPERATIONS, tagsOf, type OperationName, type OperationRequest, type OperationResult } from '../shared/operations.ts';
import { base64Content, MAX_FILE_BYTES, parseRequest } from '../shared/requests.ts';
import type { MachineManager } from './machine-manager.ts';

/** The work of each operation of `OPERATIONS` (shared/operations.ts), on a manager's machines, its request checked. */
export type OperationWork = {
  [K in OperationName]: (manager: MachineManager, request: OperationRequest<K>) => Promise<OperationResult<K>> | OperationResult<K>;
};

export const MACHINE_OPERATIONS: OperationWork = {
  list: (manager, { tag, here }) => (here ? manager.list(tagsOf(tag)) : manager.listEverywhere(tagsOf(tag))),
  get: (manager, { name }) => manager.get(name),
  delete: async (manager, { name }) => {
    await manager.delete(name);
    return true as const;
  },
  interrupt: (manager, { name }) => manager.interrupt(name),
  swap: async (manager, { name }) => {
    await manager.swap(name);
    return manager.get(name);
  },
  variables: (manager, { name }) => manager.kernel(name, 'variables', {}),
  variable: (manager, { name, variable }) => manager.kernel(name, 'variable', { name: variable }),
  history: (manager, { name, last }) => manager.history(name, last),
  installPackages: (manager, { name, packages }) => manager.installPackages(name, packages),
  listFiles: (manager, { name, path }) => manager.kernel(name, 'list_files', { path }),
  readFile: (manager, { name, path }) => manager.kernel(name, 'read_file', { path, limit: MAX_FILE_BYTES }),
  writeFile: (manager, { name, path, content, encoding }) => manager.kernel(name, 'write_file', { path, content: base64Content(content, encoding) }),
  fork: (manager, { name, ...options }) => manager.fork(name, options),
  update: (manager, { name, ...change }) => manager.update(name, change),
  checkpoint: (manager, { name, label }) => manager.checkpoint(name, label === undefined ? {} : { label }),
  checkpoints: (manager, { name }) => manager.checkpoints(name),
  deleteCheckpoint: async (manager, { name, checkpoint }) => {
    await manager.deleteCheckpoint(name, checkpoint);
    return true as const;
  },
  rollback: (manager, { name, checkpoint }) => manager.rollback(name, checkpoint),
  upgrade: (manager, { name }) => manager.upgrade(name),
  reset: (manager, { name }) => manager.kernel(name, 'reset', {}),
  inspect: (manager, { name, expression }) => manager.kernel(name, 'inspect', { expr: expression }),
  isComplete: (manager, { name, code }) => manager.kernel(name, 'is_complete', { code }),
  complete: (manager, { name, code, cursor }) => manager.complete(name, { code, cursor }),
  comm: (manager, { name, message }) => manager.kernel(name, 'comm', { message }),
  startIPython: async (manager, { name }) => (await manager.kernel(name, 'start_ipython', {})).available,
};

/** Operation `op` on `manager`'s machines: `request` checked against the table's schema, then the work. */
export async function performOperation<K extends OperationName>(manager: MachineManager, op: K, request: unknown): Promise<OperationResult<K>> {
  const work = MACHINE_OPERATIONS[op] as (manager: MachineManager, request: unknown) => Promise<OperationResult<K>> | OperationResult<K>;
  return work(manager, parseRequest(OPERATIONS[op].request, request));
}
