import type { ExecOptions, MachineManager } from '../machines/machine-manager.ts';
import { performOperation } from '../machines/machine-operations.ts';
import { engineDescriptor, type EngineName } from '../engines/descriptors.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { Right } from '../shared/machine-rights.ts';
import { OPERATIONS, type OperationName, type OperationResult } from '../shared/operations.ts';
import { NewMachineOptions, parseRequest } from '../shared/requests.ts';
import type { AuditEntry } from '../shared/team-requests.ts';
import type { ExecResult, MachineAccess, MachineEvent, MachineInfo, OutputChunk, StatusReport } from '../shared/types.ts';
import type { Principal } from '../team/principal.ts';
import type { Team } from '../team/team.ts';
import { localAccount, statusReport, toForeverVMError } from './machine-answers.ts';

/**
 * The machines as one caller may reach them: every surface (the ForeverVM routes, Perennial's
 * operations, the REPL socket, the event stream, MCP's in-process client) goes through here, so
 * that what a person may see and do is decided in one place (`Team`), never route by route. A
 * machine the caller may not see is answered as one that does not exist; a listing or an event
 * stream shows only what they may see.
 */
export class CallerMachines {
  /** `from`: where the caller's requests come from, for the audit log (an address and how: `127.0.0.1 http`). */
  constructor(
    readonly manager: MachineManager,
    readonly team: Team,
    readonly principal: Principal,
    readonly from: string,
  ) {}

  /**
   * Does `work` and, on a team's server, logs it as `action` on `machine` (with `target`): done,
   * failed, or refused. Without an action, only a refusal is logged (reads that clients repeat).
   */
  async audited<T>(action: string | undefined, machine: string | undefined, work: () => Promise<T>, target?: (result: T) => string | undefined): Promise<T> {
    try {
      const result = await work();
      if (action) await this.#record(action, machine, 'done', undefined, target?.(result));
      return result;
    } catch (error) {
      const code = toForeverVMError(error).code;
      const refused = REFUSALS.has(code);
      if (action || refused) await this.#record(action ?? 'asked', machine, refused ? 'refused' : 'failed', code);
      throw error;
    }
  }

  #record(action: string, machine: string | undefined, outcome: AuditEntry['outcome'], code?: string, target?: string): Promise<void> {
    return this.team.record(this.principal, {
      action,
      ...(machine === undefined ? {} : { machine }),
      ...(target === undefined ? {} : { target }),
      from: this.from,
      outcome,
      ...(code === undefined ? {} : { code }),
    });
  }

  /** Throws unless the caller holds `right` on `name` (404 when the machine is not theirs to see). */
  require(name: string, right: Right): Promise<void> {
    return this.team.require(this.principal, name, right);
  }

  async whoami(): Promise<{ account: string }> {
    return this.team.whoami(this.principal, localAccount().account);
  }

  create(request: NewMachineOptions = {}): Promise<MachineInfo> {
    return this.audited(
      'made',
      undefined,
      async () => {
        const options = parseRequest(NewMachineOptions, request);
        await this.#mayMake(options.engine ?? this.manager.defaultEngine, options.memoryMb, {
          folder: options.workdir ?? options.workspace,
          python: options.python,
        });
        return this.#mine(await this.manager.create(options, this.#claim));
      },
      (info) => info.name,
    );
  }

  /** Operation `op`, checked against what the caller holds on the machine it names. */
  operation<K extends OperationName>(op: K, request: Record<string, unknown>): Promise<OperationResult<K>> {
    const machine = op === 'list' ? undefined : String(request.name);
    return this.audited(
      AUDITED[op],
      machine,
      () => this.#operation(op, request),
      (result) => (op === 'fork' ? (result as MachineInfo).name : undefined),
    );
  }

  async #operation<K extends OperationName>(op: K, request: Record<string, unknown>): Promise<OperationResult<K>> {
    if (op === 'list') return this.#visible((await performOperation(this.manager, 'list', request)) as MachineInfo[]) as Promise<OperationResult<K>>;
    const name = String(request.name);
    await this.require(name, OPERATIONS[op].right);
    if (op === 'fork') {
      const { name: origin, ...fork } = parseRequest(OPERATIONS.fork.request, request);
      const { engine, memoryMb } = this.manager.get(origin);
      await this.#mayMake(engine === 'forevervm' ? this.manager.defaultEngine : engine, memoryMb, { folder: fork.workdir ?? undefined });
      return this.#mine(await this.manager.fork(origin, fork, this.#claim)) as OperationResult<K>;
    }
    const result = await performOperation(this.manager, op, request);
    if (op === 'delete') await this.team.release(name);
    // A machine's details say whose it is, as its listing does.
    if (op === 'get' || op === 'swap' || op === 'update') return (await this.#visible([result as MachineInfo]))[0] as OperationResult<K>;
    return result;
  }

  exec(name: string, code: string, options: ExecOptions = {}): ReturnType<MachineManager['exec']> {
    return this.audited('ran', name, async () => {
      await this.require(name, 'run');
      return this.manager.exec(name, code, options);
    });
  }

  run(name: string, code: string, options: Parameters<MachineManager['run']>[2] = {}): ReturnType<MachineManager['run']> {
    return this.audited('ran', name, async () => {
      await this.require(name, 'run');
      return this.manager.run(name, code, options);
    });
  }

  result(name: string, seq: number): Promise<ExecResult> {
    return this.audited(undefined, name, async () => {
      await this.require(name, 'read');
      return this.manager.result(name, seq);
    });
  }

  follow(name: string, seq: number, onChunk: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult> {
    return this.audited(undefined, name, async () => {
      await this.require(name, 'read');
      return this.manager.follow(name, seq, onChunk, signal);
    });
  }

  /** Every machine the caller may see, carrying `tags`, in a cluster on every node. */
  async listEverywhere(tags: Record<string, string> = {}): Promise<MachineInfo[]> {
    return this.#visible(await this.manager.listEverywhere(tags));
  }

  async status(): Promise<StatusReport> {
    const report = await statusReport(this.manager);
    if (!(await this.team.enabled()) || this.principal.kind === 'operator') return report;
    const view = await this.team.view(this.principal);
    const mine = this.manager.list().filter((m) => view(m.name));
    const swapped = mine.filter((m) => m.state === 'swapped').length;
    return {
      ...report,
      // Where the server keeps its files, and other people's machines, are not a person's to know.
      dataDir: '',
      machines: { total: mine.length, warm: mine.length - swapped, swapped, upgradable: mine.filter((m) => m.upgradeTo).length },
      swappedOut: report.swappedOut?.filter((entry) => view(entry.name)),
    };
  }

  /**
   * Calls `listener` with every change to a machine the caller may see. Whether they may is read
   * at each event, so that a share given or ended meanwhile counts from then on.
   */
  watch(listener: (event: MachineEvent) => void): () => void {
    if (this.principal.kind === 'operator') return this.manager.watch(listener);
    let queue = Promise.resolve();
    return this.manager.watch((event) => {
      const name = event.type === 'created' ? event.machine.name : event.name;
      // In order, each once the team has been read: an event never overtakes the one before.
      queue = queue.then(async () => {
        const view = await this.team.view(this.principal);
        if (view(name)) listener(event.type === 'created' ? { ...event, machine: withAccess(event.machine, view(name)!) } : event);
      });
    });
  }

  async #visible(machines: MachineInfo[]): Promise<MachineInfo[]> {
    if (!(await this.team.enabled())) return machines;
    const view = await this.team.view(this.principal, true);
    return machines.flatMap((machine) => {
      const access = view(machine.name);
      return access ? [withAccess(machine, access)] : [];
    });
  }

  /** Throws what forbids the caller to make a machine of `engine`: its scope, its quota, or (a person) a machine that reaches the host. */
  async #mayMake(engine: EngineName, memoryMb: number | undefined, reach: { folder?: string; python?: string }): Promise<void> {
    if (this.principal.kind === 'operator' || !(await this.team.enabled())) return;
    const descriptor = engineDescriptor(engine);
    if (!descriptor.confined)
      throw new ForeverVMError(
        403,
        'EngineNotAllowed',
        `On a team's server people make sandbox machines only: the ${engine} engine runs as the server's own user`,
      );
    if (reach.folder !== undefined || reach.python !== undefined)
      throw new ForeverVMError(
        403,
        'HostFolderNotAllowed',
        "On a team's server a machine works in its own folder: the server's folders are not a person's to mount",
      );
    const owners = await this.team.owners();
    const owned = (person: string) => {
      const machines = this.manager.list().filter((m) => owners.get(m.name) === person);
      const warm = machines.filter((m) => m.state !== 'swapped');
      const disk = machines.reduce((bytes, m) => bytes + (m.snapshot?.bytes ?? 0), 0);
      return { machines: machines.length, warmMemoryMb: warm.reduce((mb, m) => mb + m.memoryMb, 0), diskMb: Math.ceil(disk / 2 ** 20) };
    };
    await this.team.mayCreate(this.principal, owned, memoryMb ?? descriptor.defaultMemoryMb);
  }

  /** Records a machine just made as the caller's, before it is announced. */
  readonly #claim = (name: string) => this.team.claim(this.principal, name);

  /** A machine just made, with its access as its maker's. */
  #mine(info: MachineInfo): MachineInfo {
    return this.principal.kind === 'person' ? withAccess(info, { owner: this.principal.person, right: 'own', shares: [] }) : info;
  }
}

/** The errors that are a refusal of the caller, as the audit log says. */
const REFUSALS = new Set(['MachineNotFound', 'NotShared', 'MissingScope', 'QuotaExceeded', 'EngineNotAllowed', 'HostFolderNotAllowed', 'Forbidden']);

/** What the audit log calls each operation; the ones without are reads clients repeat (details, completion), logged only when refused. */
const AUDITED: Partial<Record<OperationName, string>> = {
  delete: 'deleted',
  fork: 'forked',
  interrupt: 'interrupted',
  swap: 'swapped',
  variables: 'read',
  variable: 'read',
  history: 'read',
  listFiles: 'read',
  readFile: 'read',
  checkpoints: 'read',
  writeFile: 'wrote a file',
  installPackages: 'installed packages',
  update: 'changed',
  checkpoint: 'checkpointed',
  deleteCheckpoint: 'deleted a checkpoint',
  rollback: 'rolled back',
  upgrade: 'upgraded',
  reset: 'reset',
};

/** A machine's listing entry with whose it is and what the caller may do, on a team's server. */
function withAccess(machine: MachineInfo, access: MachineAccess): MachineInfo {
  return { ...machine, access };
}
