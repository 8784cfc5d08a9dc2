import { userInfo } from 'node:os';
import { InstructionNotFoundError, MachineGoneError, type MachineManager } from '../machines/machine-manager.ts';
import { errorCodeOf } from '../platform/coded-error.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import { InvalidRequestError } from '../shared/requests.ts';
import type { StatusReport } from '../shared/types.ts';
import { VERSION } from '../shared/version.ts';

/*
 * What the machines layer's answers are to a client, the same over HTTP (the route files) and in
 * process (InProcessClient): errors in ForeverVM's shape, the status report, machine events.
 */

/** HTTP statuses for the errors the machines layer names with an `errorCode`. */
const STATUS_BY_CODE: Record<string, number> = {
  KernelCommandFailed: 400, // no such variable or file, a bad expression: the caller can fix it
  PackageUnavailable: 400,
  EngineStartFailed: 503,
  EngineExited: 503,
  SnapshotVersionMismatch: 409,
  CheckpointNotFound: 404,
  NotSaved: 507, // a full disk, most often
  UpgradeRefused: 409,
  MachineNameTaken: 409,
  // In a cluster: the machine went to another node meanwhile (asked again, the request goes there).
  MachineMoved: 409,
  // The cluster's engines: nothing was changed, and the request may be sent again once they are back.
  ClusterUnavailable: 503,
  StoreUnavailable: 503,
  NodeUnreachable: 503,
};

/** The error a request gets for anything that went wrong, in ForeverVM's shape. */
export function toForeverVMError(error: unknown): ForeverVMError {
  if (error instanceof ForeverVMError) return error;
  if (error instanceof MachineGoneError) return new ForeverVMError(404, 'MachineNotFound', error.message, error.machine);
  if (error instanceof InstructionNotFoundError) return new ForeverVMError(404, 'InstructionNotFound', error.message);
  if (error instanceof InvalidRequestError) return new ForeverVMError(400, 'BadRequest', error.message);
  const code = errorCodeOf(error);
  if (code) return new ForeverVMError(STATUS_BY_CODE[code] ?? 500, code, (error as Error).message);
  return new ForeverVMError(500, 'InternalError', `Internal error: ${(error as Error)?.message ?? String(error)}`);
}

/** `GET /v1/whoami` of the local server: the user it runs as. */
export function localAccount(): { account: string } {
  return { account: `${userInfo().username} (Perennial local server)` };
}

/** What `GET /v1/status` reports. */
export async function statusReport(manager: MachineManager): Promise<StatusReport> {
  const machines = manager.list();
  const cluster = await manager.cluster();
  const swapped = machines.filter((m) => m.state === 'swapped').length;
  return {
    version: VERSION,
    pid: process.pid,
    dataDir: manager.dataDir,
    machines: { total: machines.length, warm: machines.length - swapped, swapped, upgradable: machines.filter((m) => m.upgradeTo).length },
    defaultEngine: manager.defaultEngine,
    engines: manager.engineStatus(),
    warmRule: manager.warmRule(),
    swappedOut: machines
      .flatMap((m) => (m.swappedOut ? [{ name: m.name, ...m.swappedOut }] : []))
      .sort((a, b) => b.at.localeCompare(a.at))
      .slice(0, 10),
    ...(cluster ? { cluster } : {}),
  };
}
