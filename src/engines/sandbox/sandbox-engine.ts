import { open } from 'node:fs/promises';
import { PhaseClock } from '../../platform/phase-timings.ts';
import { isPackageName } from '../../shared/requests.ts';
import type { ExecResult, LostItem, MachineRuntime } from '../../shared/types.ts';
import {
  AlreadyCurrentError,
  CellQuestions,
  type CellListeners,
  type Engine,
  type EngineExit,
  type EngineOptions,
  KernelCommandError,
  type RestoreReport,
  type SnapshotReport,
  type UpgradeReport,
} from '../engine.ts';
import type { KernelArgs, KernelOp, KernelResult } from '../kernel-commands.ts';
import { ImageVersionError, readImageHeaderFile } from './machine-image-file.ts';
import { mountPoint } from './mount-point.ts';
import type { MachineConfig } from './protocol.ts';
import type { SandboxPlacement, SandboxRuntime } from './sandbox-runtime.ts';
import type { SandboxProcess, TakenSnapshot } from './sandbox-process.ts';

/** Where an upgrade's pickled namespace crosses between builds, inside the machine's files. */
const UPGRADE_TRANSFER = '/tmp/.perennial-upgrade.pickle';

/** The sandbox runtimes of a data dir, one per Pyodide build it ships, each made when first needed. */
export interface SandboxRuntimes {
  /** The build new machines run. */
  current(): SandboxRuntime;
  /** The runtime of a build, when this Perennial ships it. */
  of(pyodideVersion: string): SandboxRuntime | undefined;
  /** The versions shipped, newest first. */
  readonly versions: string[];
}

/**
 * The `sandbox` engine: Pyodide in a locked-down process (bubblewrap + the Node permission model),
 * swapped with exact memory snapshots. A machine is loaded lazily: `restore()` loads its image on
 * the Pyodide build that made it, anything else first takes a fresh machine of the current build.
 */
export class SandboxEngine implements Engine {
  readonly name = 'sandbox' as const;
  readonly exited: Promise<EngineExit>;
  #resolveExit!: (exit: EngineExit) => void;
  #runtime?: SandboxRuntime;
  #process?: Promise<SandboxProcess>;
  #stopped = false;
  /** Its process went back to the runtime for the next machine: what becomes of it is not this machine's. */
  #released = false;
  #pid?: number;
  readonly #config: MachineConfig;
  readonly #placement: SandboxPlacement;

  constructor(
    private readonly runtimes: SandboxRuntimes,
    options: EngineOptions,
  ) {
    this.exited = new Promise((resolve) => (this.#resolveExit = resolve));
    const workspace = options.folder ? { hostPath: options.folder, writable: true, at: mountPoint(options.folder) } : options.workspace;
    this.#config = { memoryMb: options.memoryMb, outputLimit: options.outputLimit, ...(workspace ? { workspace } : {}) };
    this.#placement = { network: options.network ?? false, ...(workspace ? { workspace } : {}), ...(options.tenant ? { tenant: options.tenant } : {}) };
  }

  get pid(): number | undefined {
    return this.#pid;
  }

  async start(): Promise<void> {
    // Nothing to do yet: whether the machine is fresh or restored is known at the next call.
  }

  get runtime(): MachineRuntime | undefined {
    const pyodide = this.#runtime?.pyodide;
    return pyodide && { python: pyodide.python, pyodide: pyodide.version };
  }

  async restore(snapshotPath: string): Promise<RestoreReport> {
    const clock = new PhaseClock();
    const { pyodideVersion } = await readImageHeaderFile(snapshotPath);
    clock.lap('host: image header read');
    const runtime = this.runtimes.of(pyodideVersion);
    if (!runtime) throw new ImageVersionError(pyodideVersion, this.runtimes.versions);
    this.#runtime = runtime;
    this.#attach(runtime.restore(this.#placement, this.#config, snapshotPath));
    return { notices: (await this.#process!).notices };
  }

  async ready(): Promise<void> {
    await this.#loaded();
  }

  async run(code: string, cell: number, { onOutput, onInput, onDisplay }: CellListeners): Promise<ExecResult> {
    const process = await this.#loaded();
    const questions = new CellQuestions(onInput);
    process.onOutput = onOutput;
    process.onQuestion = (request) => questions.answer(request);
    process.onDisplay = onDisplay;
    try {
      const started = performance.now();
      let result = (await process.call('run', { code, cell })) as ExecResult | { needPackages: string[]; pip?: true };
      if ('needPackages' in result) {
        // The cell imports packages the index has (or asks for them with %pip): install them first, then run it.
        try {
          onOutput('stderr', `perennial: installing ${await this.installPackages(result.needPackages)}\n`);
        } catch (error) {
          return { error: `${installFailure(result)}${(error as Error).message}`, runtime_ms: Math.round(performance.now() - started) };
        }
        result = (await process.call('run', { code, cell, installed: true })) as ExecResult;
      }
      return result as ExecResult;
    } finally {
      process.onOutput = undefined;
      process.onQuestion = undefined;
      process.onDisplay = undefined;
      questions.end();
    }
  }

  /** Installs from the sandbox's package index (Pyodide's), nowhere else: each sandbox machine has its own. */
  async installPackages(packages: string[]): Promise<string> {
    const other = packages.find((spec) => !isPackageName(spec));
    if (other !== undefined)
      throw new KernelCommandError(`a sandbox machine installs packages by name from its package index, not ${JSON.stringify(other)}: name the package`);
    const process = await this.#loaded();
    const { packages: cache } = this.#runtime!;
    const wanted = await cache.resolve(packages);
    await process.loadPackages(await cache.ensure(wanted));
    await process.call('refresh_imports', {});
    return wanted.map((p) => `${p.name} ${p.version}`).join(', ') || 'nothing (already installed)';
  }

  interrupt(): void {
    void this.#process?.then(
      (process) => process.interrupt(),
      () => {},
    );
  }

  async command<Op extends KernelOp>(op: Op, args: KernelArgs<Op>): Promise<KernelResult<Op>> {
    return (await (await this.#loaded()).call(op, args)) as KernelResult<Op>;
  }

  /** Takes the state at once (the machine runs on from there), then makes its image and writes it behind. */
  async snapshot(path: string): Promise<SnapshotReport> {
    const process = await this.#loaded();
    const clock = new PhaseClock();
    const taken = await process.snapshot();
    clock.lap('sandbox: messages crossing', taken.timings);
    return { lost: taken.lost, written: this.#write(path, taken.image, taken.lost, clock) };
  }

  async #write(path: string, made: TakenSnapshot['image'], lost: LostItem[], clock: PhaseClock): Promise<{ bytes: number }> {
    const { image, timings } = await made;
    clock.lap('sandbox, behind: messages crossing', timings);
    const parts = await this.#runtime!.encode(image, lost);
    clock.lap('host: compressed');
    const handle = await open(path, 'w', 0o600);
    try {
      // One write per piece: writev of the same pieces took 20–190 ms where this takes 25 (80 MB).
      for (const part of parts) for (let done = 0; done < part.length;) done += (await handle.write(part, done)).bytesWritten;
      clock.lap('host: written');
      await handle.sync();
      clock.lap('host: fsync');
    } finally {
      await handle.close();
    }
    return { bytes: parts.reduce((sum, part) => sum + part.length, 0) };
  }

  /**
   * Moves the machine onto the current Pyodide build. A memory snapshot loads only into the build
   * that made it, so the state goes through the kernel's pickling path, as the python engine swaps:
   * the namespace is pickled to a file, the machine's own files (with that one) and the names of
   * its packages go to a fresh machine of the current build, which installs those packages from
   * its own set and loads the namespace. The old process stops only once all of that succeeded.
   */
  async upgrade(): Promise<UpgradeReport> {
    const old = await this.#loaded();
    const from = this.#runtime!;
    const to = this.runtimes.current();
    if (from === to) throw new AlreadyCurrentError(`Pyodide ${to.pyodide.version} (Python ${to.pyodide.python})`);
    // What the pickling could not save comes back with what the loading could not load.
    await old.call('snapshot', { path: UPGRADE_TRANSFER });
    const { archive, packages } = await old.exportFiles();
    const lost: LostItem[] = [];
    const next = await to.fresh(this.#placement, this.#config);
    try {
      await next.importFiles(archive);
      for (const name of packages) {
        try {
          await next.loadPackages(await to.packages.ensure(await to.packages.resolve([name])));
        } catch (error) {
          lost.push({ name: `package ${name}`, reason: `not installed on Pyodide ${to.pyodideVersion}: ${(error as Error).message}` });
        }
      }
      if (packages.length) await next.call('refresh_imports', {});
      lost.push(...((await next.call('restore', { path: UPGRADE_TRANSFER, transfer: true })) as { lost: LostItem[] }).lost);
    } catch (error) {
      await next.kill();
      throw error;
    }
    const report = { from: this.runtime!, to: { python: to.pyodide.python, pyodide: to.pyodideVersion }, lost };
    this.#runtime = to;
    this.#attach(Promise.resolve(next));
    await old.kill();
    return report;
  }

  /** Ends the machine here: its process goes back to the runtime when it is idle (the next machine's), else, or when `last`, it is ended. */
  async stop({ last = false }: { last?: boolean } = {}): Promise<void> {
    this.#stopped = true;
    const process = await this.#process?.catch(() => undefined);
    if (process?.alive && process.idle && !last) {
      this.#released = true;
      await this.#runtime!.release(process);
    } else if (process) {
      await process.kill();
      return;
    }
    this.#resolveExit({ code: null, signal: null, requested: true });
  }

  #loaded(): Promise<SandboxProcess> {
    if (!this.#process) {
      this.#runtime = this.runtimes.current();
      this.#attach(this.#runtime.fresh(this.#placement, this.#config));
    }
    return this.#process!;
  }

  #attach(acquired: Promise<SandboxProcess>): void {
    this.#process = acquired.then(async (process) => {
      if (this.#stopped) {
        await process.kill();
        throw new Error('the machine was stopped while it was being loaded');
      }
      // Only the current process's exit is the machine's: an upgrade stops the one it replaced.
      void process.exited.then((exit) => {
        if (this.#pid === process.pid && !this.#released) this.#resolveExit(exit);
      });
      this.#pid = process.pid;
      return process;
    });
    this.#process.catch(() => {});
  }
}

/** How a cell's error begins when what it needed could not be installed: why it needed it. */
function installFailure(need: { needPackages: string[]; pip?: true }): string {
  if (need.pip) return 'PackageUnavailable: %pip install in a sandbox machine takes packages from its package index: ';
  if (need.needPackages.includes('IPython'))
    return "ModuleNotFoundError: this cell is in IPython's syntax (a %magic, a !command), so the machine first installs IPython and what it needs from its package index, and could not: ";
  return 'ModuleNotFoundError: ';
}
