import { existsSync } from 'node:fs';
import { EventEmitter } from 'node:events';
import { engineDescriptor } from '../engines/descriptors.ts';
import { openEngines, type EngineSet } from '../engines/index.ts';
import type { Engine } from '../engines/engine.ts';
import { NameClaims, nearestName } from './machine-names.ts';
import { forkManifest, newManifest, realFolder } from './new-manifests.ts';
import { MachineDetails } from './machine-details.ts';
import { changesState, type KernelArgs, type KernelOp, type KernelResult } from '../engines/kernel-commands.ts';
import type {
  CheckpointInfo,
  ClusterStatus,
  Completions,
  EngineStatus,
  ExecResult,
  HistoryEntry,
  InterruptResult,
  MachineEvent,
  MachineInfo,
  OutputChunk,
  RollbackResult,
  UpgradeResult,
} from '../shared/types.ts';
import {
  CheckpointBody,
  CheckpointRef,
  CompleteBody,
  ForkBody,
  MachineUpdate,
  InvalidRequestError,
  NewMachineOptions,
  Packages,
  Tags,
  TimeoutSeconds,
  parseRequest,
  type EngineName,
} from '../shared/requests.ts';
import { DataDirLock, type LockRecord } from '../platform/data-dir-lock.ts';
import { checkDataDirFormat, markDataDir } from '../platform/data-dir-format.ts';
import { VERSION } from '../shared/version.ts';
import { CheckpointNotFoundError, Machine, MachineGoneError, type QueuedInstruction, type MachineChange } from './machine.ts';
import { MachineStore, type MachineManifest } from './machine-store.ts';
import { createFork } from './fork.ts';
import { WarmPolicy } from './warm-policy.ts';
import { rebuildManifest } from './manifest-rebuild.ts';
import { InstructionNotFoundError, MachineMovedError, MachineNameTakenError } from './machine-errors.ts';
import type { MachineCustody, UncleanStop } from './machine-custody.ts';
import { managerSettings, toMachineEvent, type ExecOptions, type MachineManagerOptions, type ManagerEvent, type ManagerSettings } from './manager-options.ts';

export { DEFAULT_AUTO_CHECKPOINTS, DEFAULT_IDLE_SECONDS, DEFAULT_OUTPUT_LIMIT, DEFAULT_TIMEOUT_SECONDS } from './manager-options.ts';
export type { ExecOptions, MachineManagerOptions, ManagerEvent } from './manager-options.ts';
export { CheckpointNotFoundError, InstructionNotFoundError, InvalidRequestError, MachineGoneError, MachineMovedError, MachineNameTakenError };

/**
 * Owns a data dir and all of its machines: creates, runs, swaps and deletes them, and keeps them
 * durable so that they come back after a restart or a crash. Emits `event` with a ManagerEvent for
 * everything that changes, and `left` with the name of a machine let go (detached: another node
 * runs it now), whose open connections should find it again where it went.
 */
export class MachineManager extends EventEmitter<{ event: [ManagerEvent]; left: [string] }> {
  readonly dataDir: string;
  readonly #settings: ManagerSettings;
  /** What a cluster's node works with (`MachineCustody`). */
  readonly custody: MachineCustody;
  /** Installs under way, by machine and packages. */
  readonly #installs = new Map<string, Promise<string>>();
  readonly #engines: EngineSet;
  readonly #store: MachineStore;
  readonly #lock: DataDirLock;
  readonly #machines = new Map<string, Machine>();
  readonly #names: NameClaims;
  readonly #details: MachineDetails;
  readonly #warm: WarmPolicy;
  #closed = false;

  private constructor(options: MachineManagerOptions, store: MachineStore, lock: DataDirLock) {
    super();
    this.dataDir = options.dataDir;
    this.#engines = options.engines ?? openEngines({ dataDir: options.dataDir, poolIdleSeconds: options.poolIdleSeconds, baseImages: options.baseImages });
    this.#settings = managerSettings(options, (engine) => Boolean(this.#engines.factories[engine]));
    this.#store = store;
    this.#lock = lock;
    this.#details = new MachineDetails(this.#engines);
    this.#names = new NameClaims(
      (name) => this.#machines.has(name) || existsSync(store.dir(name)),
      (name) => store.isUsed(name),
      (name) => this.#settings.home.isUsed(name),
    );
    this.#warm = new WarmPolicy(
      this.#settings.warm,
      () => this.#machines.values(),
      (machine, error) => this.#emit({ type: 'error', name: machine.name, message: `swap out failed, machine kept warm: ${error.message}` }),
    );
    this.custody = {
      has: (name) => this.#machines.has(name),
      store,
      attach: (name, unclean) => this.#attach(name, unclean),
      detach: (name, reason) => this.#detach(name, reason),
      tell: (name, message) => this.#tell(name, message),
      room: () => this.#warm.room(),
    };
    if (!this.#engines.factories[this.#settings.defaultEngine]) {
      const why = this.#engines.status().find((e) => e.name === this.#settings.defaultEngine)?.detail;
      throw new InvalidRequestError(`The default engine "${this.#settings.defaultEngine}" is not available${why ? `: ${why}` : ''}`);
    }
  }

  /**
   * Takes the data dir's lock and loads every machine in it (all swapped out). A data dir that a
   * newer Perennial wrote in a format this one cannot read is refused before anything is written.
   */
  static async open(options: MachineManagerOptions): Promise<MachineManager> {
    await checkDataDirFormat(options.dataDir, VERSION);
    const lock = (options.handedLock && (await DataDirLock.adopt(options.dataDir, options.handedLock))) || (await DataDirLock.acquire(options.dataDir));
    try {
      // Again under the lock: a newer build may have taken the data dir meanwhile.
      await checkDataDirFormat(options.dataDir, VERSION);
      await markDataDir(options.dataDir, VERSION);
      const store = new MachineStore(options.dataDir);
      await store.init();
      const manager = new MachineManager(options, store, lock);
      if (manager.#settings.home.ownsDataDir) await manager.#load();
      return manager;
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  /** Engines machines can be created with. */
  get engines(): EngineName[] {
    return Object.keys(this.#engines.factories) as EngineName[];
  }

  /** Which machines stay warm, in words. */
  warmRule(): string {
    return this.#warm.describe();
  }

  get defaultEngine(): EngineName {
    return this.#settings.defaultEngine;
  }

  /** Each engine: available or not, and what its machines should know. */
  engineStatus(): EngineStatus[] {
    return this.#engines.status();
  }

  /** Fills the sandbox pool now rather than after the first sandbox machine (it starts empty). */
  prewarm(): void {
    this.#engines.prewarm();
  }

  /**
   * `made`, when given, is awaited once the machine exists and before anyone is told of it (a
   * team's server records whose it is); when it throws, the machine is removed and its error given.
   */
  async create(request: NewMachineOptions = {}, made?: (name: string) => Promise<void>): Promise<MachineInfo> {
    this.#assertOpen();
    const options = parseRequest(NewMachineOptions, request);
    const engine = options.engine ?? this.#settings.defaultEngine;
    if (!this.#engines.factories[engine]) {
      throw new InvalidRequestError(`The ${engine} engine is not available; available: ${this.engines.join(', ')}`);
    }
    // A machine that could not start is not made (a python machine with no interpreter).
    await this.#engines.assertStartable(engine, options);
    const memoryMb = options.memoryMb ?? engineDescriptor(engine).defaultMemoryMb;
    const workspace =
      options.workspace && engineDescriptor(engine).takes.workspace
        ? { hostPath: await realFolder(options.workspace, 'workspace folder'), writable: options.workspaceWritable ?? false }
        : undefined;
    if (workspace && options.workdir) throw new InvalidRequestError('A machine works in one folder: give it a workdir or a workspace, not both');
    const workdir = options.workdir ? await realFolder(options.workdir, 'working folder') : undefined;
    return this.#names.named(options.name, async (name) => {
      const manifest = newManifest(name, engine, memoryMb, options, { workspace, workdir });
      await this.#store.create(manifest);
      await this.#claim(manifest);
      const machine = this.#adopt(manifest);
      await this.#made(name, made);
      const info = this.#details.of(machine);
      this.#emit({ type: 'created', machine: info });
      return info;
    });
  }

  /** Machines carrying every given tag, newest first. */
  list(tags: Record<string, string> = {}): MachineInfo[] {
    return this.#details.list(this.#machines.values(), tags);
  }

  /**
   * Machines carrying every given tag, newest first, wherever they run: this manager's, and (in a
   * cluster) those its home knows elsewhere, each with the node that runs it.
   */
  listEverywhere(tags: Record<string, string> = {}): Promise<MachineInfo[]> {
    return this.#details.everywhere(this.#machines, this.#settings.home, tags);
  }

  /**
   * Calls `listener` with every change to the machines, as clients get it: this manager's, and (in
   * a cluster) the other nodes', until the answer is called.
   */
  watch(listener: (event: MachineEvent) => void): () => void {
    const own = (event: ManagerEvent) => listener(toMachineEvent(event));
    this.on('event', own);
    const beyond = this.#settings.home.watch(listener);
    return () => {
      this.off('event', own);
      beyond();
    };
  }

  /** The cluster this manager serves as a node's, for its status; none on one computer. */
  cluster(): Promise<ClusterStatus | undefined> {
    return this.#settings.home.cluster();
  }

  get(name: string): MachineInfo {
    return this.#details.of(this.#machine(name));
  }

  /** Queues an instruction; resolves as soon as it has a seq. */
  async exec(name: string, code: string, options: ExecOptions = {}): Promise<{ seq: number; interrupted: boolean; done: Promise<ExecResult> }> {
    if (typeof code !== 'string') throw new InvalidRequestError('code must be a string');
    const timeoutSeconds = parseRequest(TimeoutSeconds, options.timeoutSeconds ?? this.#settings.defaultTimeoutSeconds);
    const machine = await this.#reserved(name);
    let interrupted = false;
    if (options.interrupt) {
      const stopped = machine.interrupt();
      interrupted = stopped.interrupted || stopped.cancelled > 0;
    }
    const instruction = machine.exec(code, timeoutSeconds, options);
    this.#warm.touch(machine);
    return { seq: instruction.seq, interrupted, done: instruction.done };
  }

  /** Runs code and waits for its result, streaming output chunks as they come. */
  async run(
    name: string,
    code: string,
    options: ExecOptions & { onOutput?: (chunk: OutputChunk) => void; onQueued?: (seq: number) => void } = {},
  ): Promise<{ seq: number; result: ExecResult }> {
    const { seq } = await this.exec(name, code, options);
    options.onQueued?.(seq);
    const result = await this.follow(name, seq, options.onOutput ?? (() => {}));
    return { seq, result };
  }

  /** The result of instruction `seq`, waiting while it runs. */
  async result(name: string, seq: number): Promise<ExecResult> {
    const result = await this.#machine(name).result(seq);
    if (!result) throw new InstructionNotFoundError(name, seq);
    return result;
  }

  /** Replays and then streams the output of instruction `seq`; resolves with its result, or rejects when `signal` aborts first. */
  async follow(name: string, seq: number, onChunk: (chunk: OutputChunk) => void, signal?: AbortSignal): Promise<ExecResult> {
    const result = await this.#machine(name).follow(seq, onChunk, signal);
    if (!result) throw new InstructionNotFoundError(name, seq);
    return result;
  }

  instruction(name: string, seq: number): QueuedInstruction | undefined {
    return this.#machine(name).instruction(seq);
  }

  /** The process running a warm machine (for diagnostics and measurements). */
  processId(name: string): number | undefined {
    return this.#machine(name).pid;
  }

  interrupt(name: string): InterruptResult {
    return this.#machine(name).interrupt();
  }

  /** Saves the machine's state to disk now, keeping it warm. */
  async save(name: string): Promise<void> {
    await this.#machine(name).save();
  }

  async swap(name: string): Promise<void> {
    await this.#machine(name).swapOut();
  }

  /**
   * A new machine with the state of `name` as it is now (variables, imports, files, and a sandbox
   * machine's exact memory), the origin's tags plus `forked_from` and `tags`. The two share
   * nothing afterwards: the fork's snapshot is a hard link to a file the origin only ever replaces.
   */
  async fork(name: string, request: ForkBody = {}, made?: (name: string) => Promise<void>): Promise<MachineInfo> {
    this.#assertOpen();
    const origin = this.#machine(name);
    const { tags, workdir } = parseRequest(ForkBody, request);
    const merged = parseRequest(Tags, { ...origin.manifest.tags, forked_from: name, ...tags });
    const folder = workdir === undefined ? origin.manifest.workdir : await this.#workdir(origin.manifest, workdir);
    return this.#names.named(undefined, async (forkName) => {
      const manifest = forkManifest(origin.manifest, forkName, merged, folder);
      await origin.withSavedState(`fork machine ${name}`, (source) => createFork(this.#store, manifest, name, source));
      await this.#claim(manifest);
      const fork = this.#adopt(manifest);
      await fork.save();
      await this.#made(forkName, made);
      const info = this.#details.of(fork);
      this.#emit({ type: 'created', machine: info });
      return info;
    });
  }

  /** Awaits `made` for a machine just made; when it throws, the machine goes, unannounced. */
  async #made(name: string, made: ((name: string) => Promise<void>) | undefined): Promise<void> {
    try {
      await made?.(name);
    } catch (error) {
      await this.delete(name).catch(() => {});
      throw error;
    }
  }

  /**
   * Changes a machine's tags (a null value removes one) and the host folder it works in (null:
   * its own again), in turn with its instructions; see `Machine.update`.
   */
  async update(name: string, request: MachineUpdate): Promise<MachineInfo> {
    const machine = this.#machine(name);
    const { tags, workdir } = parseRequest(MachineUpdate, request);
    const kept = Object.entries({ ...machine.manifest.tags, ...tags }).filter((entry): entry is [string, string] => entry[1] !== null);
    const change = {
      tags: parseRequest(Tags, Object.fromEntries(kept)),
      ...(workdir === undefined ? {} : { workdir: workdir === null ? null : await this.#workdir(machine.manifest, workdir) }),
    };
    await this.#fenced(name, () => this.#settings.home.reserve(name));
    await machine.update(change);
    return this.#details.of(machine);
  }

  /** The folder a machine is to work in, resolved here; a sandbox machine with a workspace works there already. */
  async #workdir(manifest: MachineManifest, path: string): Promise<string> {
    if (manifest.workspace)
      throw new InvalidRequestError(`Machine ${manifest.name} works in its workspace (${manifest.workspace.hostPath}): it takes no other folder`);
    return realFolder(path, 'working folder');
  }

  /** Takes a checkpoint of the machine's state now, with an optional label. */
  checkpoint(name: string, request: { label?: string } = {}): Promise<CheckpointInfo> {
    const { label } = parseRequest(CheckpointBody, request);
    return this.#machine(name).takeCheckpoint(label ?? null);
  }

  /** The machine's checkpoints, oldest first. */
  checkpoints(name: string): Promise<CheckpointInfo[]> {
    return this.#machine(name).checkpoints();
  }

  deleteCheckpoint(name: string, checkpoint: string): Promise<void> {
    return this.#machine(name).deleteCheckpoint(parseRequest(CheckpointRef, checkpoint));
  }

  /** Returns the machine to a checkpoint (by id or label), interrupting what runs; it is recorded as an instruction. */
  async rollback(name: string, checkpoint: string): Promise<RollbackResult> {
    const ref = parseRequest(CheckpointRef, checkpoint);
    return (await this.#reserved(name)).rollback(ref);
  }

  /** Moves a machine onto the newest runtime this Perennial ships, keeping a checkpoint of the state it leaves; it is recorded as an instruction. */
  async upgrade(name: string): Promise<UpgradeResult> {
    return (await this.#reserved(name)).upgrade();
  }

  async delete(name: string): Promise<void> {
    const machine = this.#machine(name);
    await this.#fenced(name, () => this.#settings.home.retire(name));
    this.#machines.delete(name);
    this.#warm.forget(name);
    await machine.delete();
    this.#emit({ type: 'deleted', name });
  }

  /**
   * Installs packages into a machine (Pyodide wheels for sandbox, pip for python). The same install
   * asked again while it is under way joins it: a client that stopped waiting asks again to wait.
   */
  async installPackages(name: string, packages: string[]): Promise<string> {
    const valid = parseRequest(Packages, packages);
    const key = JSON.stringify([name, valid]);
    const joined = this.#installs.get(key);
    if (joined) return joined;
    const installing = this.#introspect(name, (e) => e.installPackages(valid), true).finally(() => this.#installs.delete(key));
    this.#installs.set(key, installing);
    return installing;
  }

  history(name: string, last?: number): Promise<HistoryEntry[]> {
    return this.#machine(name).history(last);
  }

  /** One of the kernel's commands (variables, files, completion...), swapping the machine in if needed. */
  kernel<Op extends KernelOp>(name: string, op: Op, args: KernelArgs<Op>): Promise<KernelResult<Op>> {
    return this.#introspect(name, (e) => e.command(op, args), changesState(op));
  }

  /** What the name before the cursor can become, from the machine's namespace; offsets in UTF-16 code units, as editors count. */
  async complete(name: string, request: { code: string; cursor?: number }): Promise<Completions> {
    const { code, cursor } = parseRequest(CompleteBody, request);
    // Python counts code points.
    const before = [...code.slice(0, cursor)];
    const { matches, start } = await this.kernel(name, 'complete', { code, cursor: before.length });
    return { matches, start: before.slice(0, start).join('').length };
  }

  /** Saves every warm machine, stops all engines and releases the data dir, or hands it to `successor`. */
  async close(successor?: LockRecord): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#warm.close();
    await Promise.all(
      [...this.#machines.values()].map(async (machine) => {
        machine.interrupt();
        await machine.save().catch(async (error: Error) => {
          this.#emit({ type: 'error', name: machine.name, message: `could not save on close: ${error.message}` });
          await machine.noteUnsavedAtStop(error.message);
        });
        await machine.close();
      }),
    );
    await this.#engines.close();
    await (successor ? this.#lock.handOver(successor) : this.#lock.release());
  }

  // ---- machines handed over by a cluster's home ---------------------------------------------

  /**
   * Takes on the machine the data dir's folder `name` holds, which the home has just put there
   * (see `MachineCustody.attach`).
   */
  async #attach(name: string, unclean?: UncleanStop): Promise<MachineInfo> {
    this.#assertOpen();
    const entry = this.#store.read(name);
    if (!('manifest' in entry))
      throw new Error(
        `machine ${name} cannot be read: ${'damaged' in entry ? entry.damaged.reason : 'newer' in entry ? entry.newer : 'its folder is missing'}`,
      );
    const { manifest } = entry;
    if (unclean?.given) manifest.nextSeq = Math.max(manifest.nextSeq, unclean.given.to + 1);
    await this.#recordRuntime(manifest);
    const machine = this.#adopt(manifest);
    if (unclean) await machine.noteUncleanStop(unclean.stopped, unclean.given);
    this.#emit({ type: 'state', name, state: machine.state });
    return this.#details.of(machine);
  }

  #tell(name: string, message: string): void {
    this.#emit({ type: 'error', name, message });
  }

  /** Lets the machine go without saving it (see `MachineCustody.detach`). */
  async #detach(name: string, reason?: string): Promise<void> {
    const machine = this.#machines.get(name);
    if (!machine) return;
    if (reason) this.#tell(name, reason);
    this.#machines.delete(name);
    this.#warm.forget(name);
    machine.interrupt();
    await machine.close();
    this.emit('left', name);
  }

  // ---- internals ------------------------------------------------------------------------------

  /** The machine, once its home has given out its next instruction number here. */
  async #reserved(name: string): Promise<Machine> {
    const machine = this.#machine(name);
    await this.#fenced(name, () => this.#settings.home.reserve(name));
    return machine;
  }

  /** Runs `write` on the machine's home; when the home says another node owns the machine now, lets it go. */
  async #fenced(name: string, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (error instanceof MachineMovedError) await this.#detach(name, error.message);
      throw error;
    }
  }

  /** Records a machine made here (its folder just written) with its home, or removes it: another took the name first. */
  async #claim(manifest: MachineManifest): Promise<void> {
    if (await this.#settings.home.claim(manifest)) return;
    await this.#store.remove(manifest.name);
    throw new MachineNameTakenError(manifest.name);
  }

  async #load(): Promise<void> {
    const { manifests, damaged, newer } = this.#store.list();
    for (const manifest of manifests) {
      await this.#recordRuntime(manifest);
      await this.#adopt(manifest).noteUncleanStop();
    }
    for (const { name, reason } of newer) this.#emit({ type: 'error', name, message: `Machine ${name} is left as it is: ${reason}.` });
    for (const entry of damaged) {
      const manifest = await rebuildManifest(this.#store, entry, { engine: this.#settings.defaultEngine });
      this.#adopt(manifest).noteRebuilt();
      this.#emit({ type: 'error', name: manifest.name, message: manifest.rebuilt! });
    }
  }

  /**
   * A machine an earlier build made has no runtime in its manifest: it is read from its snapshot,
   * where the engine can tell, and written into the manifest (atomically, as every manifest write).
   */
  async #recordRuntime(manifest: MachineManifest): Promise<void> {
    if (manifest.runtime || !manifest.snapshot) return;
    const runtime = await this.#engines.snapshotRuntime(manifest.engine, this.#store.snapshotPath(manifest.name)).catch(() => undefined);
    if (!runtime) return;
    manifest.runtime = runtime;
    await this.#store.save(manifest).catch(() => {});
  }

  #adopt(manifest: MachineManifest): Machine {
    const factory = this.#engines.factories[manifest.engine];
    const machine = new Machine(
      manifest,
      this.#store,
      factory ?? (() => unavailableEngine(manifest.engine)),
      this.#settings.machines,
      (m, change) => this.#onMachineChange(m, change),
      this.#settings.home,
    );
    this.#machines.set(manifest.name, machine);
    return machine;
  }

  #onMachineChange(machine: Machine, change: MachineChange): void {
    const name = machine.name;
    switch (change.type) {
      case 'state':
        if (change.state === 'warm') this.#warm.warmed(machine);
        this.#emit({ type: 'state', name, state: change.state });
        break;
      case 'instruction':
        this.#warm.touch(machine);
        this.#emit({ type: 'instruction', name, seq: change.seq, result: change.result });
        break;
      case 'saved':
        // On the wire it keeps the name clients of earlier versions listen for.
        this.#emit({ type: 'checkpoint', name, bytes: change.bytes });
        break;
      case 'error':
        this.#emit({ type: 'error', name, message: change.message });
        break;
      case 'moved':
        void this.#detach(name, change.message);
        break;
    }
  }

  #introspect<T>(name: string, task: (engine: Engine) => Promise<T>, changesState = false): Promise<T> {
    const machine = this.#machine(name);
    this.#warm.touch(machine);
    return machine.withEngine(task, changesState);
  }

  #machine(name: string): Machine {
    this.#assertOpen();
    const machine = this.#machines.get(name);
    if (!machine) throw new MachineGoneError(name, this.#store.wasDeleted(name) ? { deleted: true } : { nearest: nearestName(name, this.#machines.keys()) });
    return machine;
  }

  #emit(event: ManagerEvent): void {
    this.emit('event', event);
  }

  #assertOpen(): void {
    if (this.#closed) throw new Error('The machine manager is closed');
  }
}

function unavailableEngine(name: EngineName): Engine {
  throw new InvalidRequestError(`The ${name} engine is not available in this build`);
}
