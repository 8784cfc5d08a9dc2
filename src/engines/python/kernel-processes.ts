import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { KERNEL_ROOT } from '../../kernel/kernel-package.ts';
import { DEFAULT_POOL_IDLE_SECONDS } from '../engine.ts';
import { PoolDemand } from '../pool-demand.ts';

/** A kernel process for a machine, and, when it came ready from the pool, its Python version. */
export interface StartedKernel {
  child: ChildProcess;
  /** Set when the kernel has said it is ready already (it waited in the pool): its interpreter's version. */
  python?: string;
}

/**
 * The kernel is imported under its own name: the user's namespace is `__main__`, and pickled
 * functions refer back to `perennial_kernel`. Its bytecode is kept in `bytecodeDir`, whether or
 * not its own folder is writable (a global npm install) and whatever the person chose for their
 * code (PYTHONDONTWRITEBYTECODE): compiling it at every start took 12 of a swap-in's 46 ms.
 */
function bootstrap(bytecodeDir: string): string {
  return `import sys
if sys.version_info < (3, 8):
    sys.stderr.write("Perennial needs Python 3.8 or newer, this is " + sys.version.split()[0] + "\\n")
    sys.exit(2)
sys.path.insert(0, ${JSON.stringify(KERNEL_ROOT)})
_own = (sys.pycache_prefix, sys.dont_write_bytecode)
sys.pycache_prefix, sys.dont_write_bytecode = ${JSON.stringify(bytecodeDir)}, False
import perennial_kernel.cpython_driver
sys.pycache_prefix, sys.dont_write_bytecode = _own
del sys.path[0], _own
perennial_kernel.cpython_driver.main()
`;
}

interface Pool {
  /** Processes whose kernel said it is ready, with their Python version. */
  ready: Array<{ child: ChildProcess; python: string }>;
  /** Processes still starting. */
  starting: Set<ChildProcess>;
  demand: PoolDemand;
}

/**
 * Where the python engine's kernel processes come from: started for a machine, or taken ready
 * from a pool, one per interpreter in demand, whose process started Python and imported the
 * kernel ahead (~30 of a swap-in's ~35 ms here). The kernel's first command (`assign`) gives a
 * process its machine; a pooled one runs the machine's base interpreter, and that command also
 * makes it what the machine's environment would have started (`environment.enter` in the kernel).
 * The pool fills and empties as the sandbox's does (`PoolDemand`).
 */
export class KernelProcesses {
  readonly #pools = new Map<string, Pool>();
  #closed = false;

  readonly #bytecodeDir: string;
  readonly #poolDir: string;
  readonly #poolIdleMs: number;

  /**
   * `bytecodeDir`: where the kernel's compiled modules are kept; `poolDir`: where pooled
   * processes wait; `poolIdleSeconds`: a pool empties after this long without a machine started
   * on its interpreter (default 300).
   */
  constructor(options: { bytecodeDir: string; poolDir: string; poolIdleSeconds?: number }) {
    this.#bytecodeDir = options.bytecodeDir;
    this.#poolDir = options.poolDir;
    this.#poolIdleMs = (options.poolIdleSeconds ?? DEFAULT_POOL_IDLE_SECONDS) * 1000;
  }

  /** A new kernel process of `python`, started in `cwd`. */
  spawn(python: string, cwd: string): ChildProcess {
    return spawn(python, ['-c', bootstrap(this.#bytecodeDir)], {
      cwd,
      env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8', MPLBACKEND: 'Agg', PERENNIAL_PARENT_PID: String(process.pid) },
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
  }

  /** A ready process of interpreter `executable`, if the pool has one; counts the demand either way. */
  take(executable: string): StartedKernel | undefined {
    const pool = this.#pool(executable);
    let taken: StartedKernel | undefined;
    while (!taken && pool.ready.length) {
      const { child, python } = pool.ready.shift()!;
      if (child.exitCode === null && child.signalCode === null) taken = { child, python };
    }
    pool.demand.demanded();
    return taken;
  }

  /** Fills the pool of `executable` now, as if machines were being started on it. */
  prewarm(executable: string): void {
    this.#pool(executable).demand.prewarm();
  }

  /** Processes waiting, ready, in the pools. */
  get ready(): number {
    return [...this.#pools.values()].reduce((sum, pool) => sum + pool.ready.length, 0);
  }

  /**
   * Ends every pooled process, ready or still starting, and waits for them to exit: one still
   * starting writes the kernel's bytecode into the data dir, which may be removed next.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const ending: ChildProcess[] = [];
    for (const pool of this.#pools.values()) {
      pool.demand.close();
      ending.push(...pool.ready.splice(0).map(({ child }) => child), ...pool.starting);
    }
    await Promise.all(ending.map(stopped));
  }

  #pool(executable: string): Pool {
    let pool = this.#pools.get(executable);
    if (!pool) {
      const made: Pool = {
        ready: [],
        starting: new Set(),
        demand: new PoolDemand(this.#poolIdleMs, { fill: () => this.#refill(executable, made), empty: () => empty(made) }),
      };
      this.#pools.set(executable, (pool = made));
    }
    return pool;
  }

  #refill(executable: string, pool: Pool): void {
    if (this.#closed || pool.ready.length + pool.starting.size > 0) return;
    mkdirSync(this.#poolDir, { recursive: true, mode: 0o700 });
    const child = this.spawn(executable, this.#poolDir);
    pool.starting.add(child);
    void whenReady(child).then((python) => {
      pool.starting.delete(child);
      if (python === undefined || this.#closed || !pool.demand.wanted) child.kill('SIGKILL');
      else pool.ready.push({ child, python });
    });
  }
}

/** Ends a pool's ready processes. */
function empty(pool: Pool): void {
  for (const { child } of pool.ready.splice(0)) child.kill('SIGKILL');
}

/** Ends a process, once it has exited (or never started). */
function stopped(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  child.kill('SIGKILL');
  return exited;
}

/**
 * Its kernel's Python version once it says it is ready, or undefined if it exits first. Its
 * output meanwhile is dropped (a ready kernel prints nothing), and its streams are left paused
 * for the engine that takes it, which resumes them once it listens.
 */
function whenReady(child: ChildProcess): Promise<string | undefined> {
  const streams = [child.stdout!, child.stderr!, child.stdio[4] as Readable];
  return new Promise((resolve) => {
    const decoder = new StringDecoder('utf8');
    let buffered = '';
    const done = (python: string | undefined) => {
      for (const stream of streams) {
        stream.removeAllListeners('data');
        stream.pause();
      }
      child.removeListener('exit', exited);
      // A pooled process that dies while it waits is dropped when it is taken.
      child.on('error', () => {});
      resolve(python);
    };
    const exited = () => done(undefined);
    child.once('exit', exited);
    child.once('error', exited);
    child.stdout!.on('data', () => {});
    child.stderr!.on('data', () => {});
    (child.stdio[4] as Readable).on('data', (data: Buffer) => {
      buffered += decoder.write(data);
      const line = buffered.split('\n', 1)[0]!;
      if (line.length === buffered.length) return;
      try {
        const event = JSON.parse(line) as { ev?: string; python?: string };
        done(event.ev === 'ready' ? String(event.python) : undefined);
      } catch {
        done(undefined);
      }
    });
  });
}
