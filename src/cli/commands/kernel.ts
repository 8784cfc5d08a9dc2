import { resolve } from 'node:path';
import type { HttpClient } from '../../client/http-client.ts';
import { CONFINED_ENGINE, engineDescriptor, PERSONS_ENGINE } from '../../engines/descriptors.ts';
import { readConnectionFile } from '../../jupyter/connection-file.ts';
import { JupyterKernel } from '../../jupyter/kernel.ts';
import { defaultKernelChoice, installKernelSpec, listKernelSpecs, removeKernelSpec } from '../../jupyter/kernelspecs.ts';
import { findNotebookMachine } from '../../notebooks/notebook-machine.ts';
import { Restarts } from '../../jupyter/restarts.ts';
import { jupyterFolders, prefixFolder } from '../../platform/jupyter-paths.ts';
import { environmentPython, probePython, pythonCommands } from '../../platform/python-commands.ts';
import { isProcessAlive, jupyterParentPid } from '../../platform/process-liveness.ts';
import type { EngineName } from '../../shared/requests.ts';
import { ExitError } from '../errors.ts';
import { newMachineOptions, type CliContext } from '../context.ts';
import { table } from '../table.ts';

export interface KernelOptions {
  connectionFile?: string;
  machine?: string;
  engine?: EngineName;
  python?: string;
}

/** How often a kernel looks for the Jupyter process that started it, and stops once it has gone. */
const PARENT_POLL_MS = 3000;

/**
 * `perennial kernel --connection-file F`: a Jupyter kernel (what a kernelspec's argv starts)
 * whose cells run on the notebook's Perennial machine through the local server. It stops when
 * its front end asks, or when the Jupyter process that started it is gone; the machine stays.
 */
export async function kernelCommand(ctx: CliContext, options: KernelOptions): Promise<void> {
  if (!options.connectionFile)
    throw new ExitError(2, 'perennial kernel: Jupyter starts it with --connection-file FILE; to make it a kernel Jupyter offers: perennial kernel install');
  const connectionFile = resolve(options.connectionFile);
  const connection = await readConnectionFile(connectionFile);
  const restarts = Restarts.beside(connectionFile);
  const log = (line: string) => ctx.term.err.write(`[perennial kernel] ${line}\n`);
  // Connected once the kernel listens: Jupyter's clients give a kernel a second to answer its heartbeat.
  let connecting: Promise<HttpClient> | undefined;
  const client = () =>
    (connecting ??= ctx.openClient().catch((error: unknown) => {
      connecting = undefined;
      throw error;
    }));
  const findMachine = async () => {
    const server = await client();
    const found = await findNotebookMachine(server, {
      pinned: options.machine,
      sessionName: process.env.JPY_SESSION_NAME || undefined,
      cwd: process.cwd(),
      connectionFile,
      defaults: newMachineOptions(options),
      elsewhere: ctx.server !== undefined,
    });
    log(found.logged);
    // A restart's own line says what the cells find; else, that the state came back.
    const restarted = await restarts.finish(server, found.info.name);
    return { ...found, notes: [...found.notes, ...(restarted.length ? restarted : found.cameBack ? [found.cameBack] : [])] };
  };
  const kernel = await JupyterKernel.start({ connection, client, findMachine, restarts, log });
  const interrupt = () => void kernel.interrupt().catch((error: Error) => log(`interrupt failed: ${error.message}`));
  process.on('SIGINT', interrupt);
  const parent = jupyterParentPid();
  const orphaned = new Promise<void>((resolve) => {
    if (parent === null) return;
    const poll = setInterval(() => {
      if (isProcessAlive(parent)) return;
      clearInterval(poll);
      log(`Jupyter (pid ${parent}) is gone: stopping; the machine keeps its state`);
      resolve();
    }, PARENT_POLL_MS);
    void kernel.stopped.then(() => clearInterval(poll));
  });
  await Promise.race([kernel.stopped, orphaned]);
  process.off('SIGINT', interrupt);
  await kernel.close();
  await (await connecting?.catch(() => undefined))?.close();
}

export interface KernelInstallOptions {
  user?: boolean;
  sysPrefix?: boolean;
  prefix?: string;
  name?: string;
  displayName?: string;
  engine?: EngineName;
  python?: string;
  machine?: string;
}

/**
 * `perennial kernel install`: a kernelspec in Jupyter's folders (the user's unless told
 * otherwise), written without Python or Jupyter. Its argv is this Node and this CLI, with the
 * data dir when one was named and the server (`--server`, whose key `perennial login` keeps
 * there) when the machines are elsewhere: there, a sandbox unless told otherwise, since the
 * person's own Python is on this computer.
 */
export async function kernelInstallCommand(ctx: CliContext, dataDirNamed: boolean, options: KernelInstallOptions): Promise<void> {
  const places = [options.user, options.sysPrefix, options.prefix !== undefined].filter(Boolean).length;
  if (places > 1) throw new ExitError(2, 'perennial kernel install: give at most one of --user, --sys-prefix and --prefix');
  const folders = jupyterFolders();
  let folder = folders.user;
  if (options.prefix !== undefined) folder = prefixFolder(resolve(options.prefix));
  else if (options.sysPrefix) {
    if (!folders.environment)
      throw new ExitError(2, 'perennial kernel install --sys-prefix: no virtual or conda environment is active (VIRTUAL_ENV, CONDA_PREFIX); use --prefix DIR');
    folder = folders.environment;
  }
  // A pinned machine is what it is: its engine and interpreter were chosen when it was made.
  const { server } = ctx;
  const engine = options.machine ? options.engine : (options.engine ?? (server ? CONFINED_ENGINE : PERSONS_ENGINE));
  const takesPython = engine !== undefined && engineDescriptor(engine).takes.python;
  // A server elsewhere runs an interpreter of its own computer, which this one cannot look for.
  const python = !takesPython ? undefined : server ? options.python : await kernelPython(options.python ?? (process.env.PERENNIAL_PYTHON || undefined));
  const choice = defaultKernelChoice({ name: options.name, displayName: options.displayName, engine, python, machine: options.machine, server });
  const launcher = [process.execPath, resolve(process.argv[1]!), ...(dataDirNamed ? ['--data-dir', ctx.dataDir] : []), ...(server ? ['--server', server] : [])];
  const dir = await installKernelSpec(folder, choice, launcher);
  ctx.term.out.write(`${dir}\n`);
  const where = server ? ` on ${server}` : '';
  const runs = options.machine
    ? `Every notebook on it runs on machine ${options.machine}${where}`
    : server
      ? `Its notebooks run on ${server} (${takesPython ? `the ${engine} engine` : 'in its sandbox'}), each on a machine of its own there that outlives every kernel; the notebook's folder stays on this computer, so files beside it are not there`
      : python
        ? `Its notebooks run on ${python}, with its packages, each on a machine of its own that outlives every kernel (not isolated: code runs as you; perennial kernel install --engine sandbox for a sandboxed kernel)`
        : 'Its notebooks run in the sandbox (Pyodide, locked down, with only the folder of each notebook), each on a machine of its own that outlives every kernel';
  ctx.term.err.write(`Installed the kernel "${choice.displayName}" (${choice.name}). ${runs}.\n`);
}

/**
 * The interpreter a python-engine kernelspec names, as an absolute path (Jupyter may start the
 * kernel with another PATH): the one named; else the active virtual or conda environment's, as
 * `python -m ipykernel install` run in it would; else the first Python on PATH.
 */
async function kernelPython(named: string | undefined): Promise<string> {
  const env = environmentPython();
  const candidates = named ? [[named]] : [...(env ? [[env]] : []), ...pythonCommands()];
  const tried: string[] = [];
  for (const [command, ...args] of candidates) {
    const found = await probePython(command!, args);
    if (typeof found !== 'string') return found.executable;
    tried.push(`${[command, ...args].join(' ')}: ${found}`);
  }
  throw new ExitError(
    1,
    `perennial kernel install: ${named ? `${named} cannot run notebooks (${tried[0]})` : `no Python 3.8 or newer found (${tried.join('; ')})`}; name one with --python, or install the sandbox's kernel: perennial kernel install --engine sandbox`,
  );
}

/** `perennial kernel list`: the Perennial kernelspecs Jupyter finds. */
export async function kernelListCommand(ctx: CliContext, options: { json?: boolean }): Promise<void> {
  const specs = await listKernelSpecs(jupyterFolders().searched);
  if (options.json) {
    ctx.term.out.write(`${JSON.stringify(specs, null, 2)}\n`);
    return;
  }
  if (!specs.length) {
    ctx.term.err.write('No Perennial kernel is installed where Jupyter looks. Install one: perennial kernel install\n');
    return;
  }
  const shown = new Set<string>();
  const rows = specs.map((spec) => {
    const used = !shown.has(spec.name);
    shown.add(spec.name);
    const machine = spec.perennial.machine ? `machine ${spec.perennial.machine}` : `${spec.perennial.engine ?? 'default'} engine`;
    const where = spec.perennial.server ? ` on ${spec.perennial.server}` : '';
    return [spec.name, spec.displayName, `${machine}${where}`, used ? spec.folder : `${spec.folder} (hidden by the one above)`];
  });
  ctx.term.out.write(`${table([['NAME', 'DISPLAY NAME', 'RUNS ON', 'FOLDER'], ...rows])}\n`);
}

/** `perennial kernel remove NAME`: the kernelspec goes; the machines its notebooks used stay. */
export async function kernelRemoveCommand(ctx: CliContext, name: string): Promise<void> {
  const removed = await removeKernelSpec(jupyterFolders().searched, name);
  if (!removed.length)
    throw new ExitError(1, `perennial kernel remove: no Perennial kernel called ${name} where Jupyter looks (perennial kernel list shows them)`);
  for (const folder of removed) ctx.term.out.write(`${folder}\n`);
  ctx.term.err.write(`Removed the kernel ${name}; the machines its notebooks ran on stay (perennial machine list --tag jupyter-notebook=PATH).\n`);
}
