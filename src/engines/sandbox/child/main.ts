/**
 * A sandbox process: boots or restores a machine, runs the kernel's commands, and takes memory
 * snapshots, all on its one thread. It starts booting Pyodide with the process, so that a
 * pooled sandbox has it booted ahead by the time the machine to load arrives. It serves one
 * machine at a time, each on a Pyodide instance of its own (one cannot be reloaded in place):
 * once the host unloads a machine, the next instance is booted ahead for the next machine, and
 * what the last one changed in the process is undone (realm-guard.ts).
 */
import './harden.ts';
import { setImmediate as setOwnImmediate } from 'node:timers';
import { collectGarbage } from '../../../platform/garbage-collection.ts';
import { PhaseClock } from '../../../platform/phase-timings.ts';
import { heapOffset, makeMemoryPatch } from '../memory-patch.ts';
import { WORKSPACE } from '../mount-point.ts';
import type { ChildMessage, ExportedFiles, HostMessage, ImportNames, MachineConfig } from '../protocol.ts';
import { blankDeadMemory, memoryInUse, memoryLayout } from './dead-memory.ts';
import { proxiedObjects } from './proxy-references.ts';
import { recordDynlibs } from './dynlibs.ts';
import { archiveFiles, restoreFiles } from './fs-archive.ts';
import { HostChannel } from './host-channel.ts';
import { arrivedImage } from './lent-image.ts';
import { PatchMaker } from './patch-maker.ts';
import { installKernelDevice } from './kernel-device.ts';
import { closeNetwork } from './no-network.ts';
import { DRIVER, HOME, PyodideLoader, type DriverCall, type LoadedBase, type Pyodide } from './pyodide-loader.ts';
import { guardRealm, type RealmGuard } from './realm-guard.ts';

const [pyodideDir, mailbox, ...flags] = process.argv.slice(2);
if (!flags.includes('--network')) closeNetwork();
if (!process.send || !pyodideDir || !mailbox) {
  process.stderr.write('usage: main.js <pyodide dir> <mailbox dir> [--network] (with an IPC channel)\n');
  process.exit(2);
}
const host = new HostChannel(mailbox);
const post = (message: ChildMessage) => host.send(message);
// Started with the process, before its `load` arrives.
const loader = PyodideLoader.prepare(pyodideDir);
loader.catch(() => {});
/**
 * The realm as the process's first machine found it once loaded, before any of its code ran
 * (realm-guard.ts): what Pyodide set up for itself is there, what a load does for a while (a
 * restore that replays side modules) is over.
 */
let realm: RealmGuard | undefined;

/** When the collection after a load runs: after the calls that follow a swap-in (configure, restore, the instruction). */
const GC_AFTER_LOAD_MS = 500;

/** The process's machine, while one is loaded. */
let machine: { py: Pyodide; call: DriverCall } | undefined;

/** The WebAssembly heap's cap: an allocation beyond it is a MemoryError, not a crash. */
let memoryLimit = Infinity;
{
  const grow = WebAssembly.Memory.prototype.grow;
  WebAssembly.Memory.prototype.grow = function (this: WebAssembly.Memory, pages: number) {
    // Emscripten's growMemory catches this: malloc returns NULL and Python raises MemoryError.
    if (this.buffer.byteLength + pages * 65536 > memoryLimit) throw new RangeError('the machine memory cap is reached');
    return grow.call(this, pages);
  };
}

/** Processor time in ms since the process started. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
/** The processor time when the process began readying for its next machine: its start, or the last machine's unload. */
let readyingFrom = 0;

async function load(message: Extract<HostMessage, { type: 'load' }>): Promise<void> {
  const clock = new PhaseClock();
  const arrived = cpuMs();
  if (machine) throw new Error('this sandbox holds a machine already');
  const { config, kernel, importNames } = message;
  const image = message.image && arrivedImage(message.image, mailbox!);
  const { instance: py, notices } = await (await loader).load({ image, kernel, outputLimit: config.outputLimit, clock });
  realm ??= guardRealm();
  // The cap applies from here: a machine restored with a lower cap than its heap still loads.
  memoryLimit = config.memoryMb * 1024 * 1024;
  machine = { py, call: connect(py, config, () => machine?.py === py) };
  clock.lap('sandbox: streams connected');
  if (importNames) {
    await configure(config, importNames);
    clock.lap('sandbox: configured');
  }
  // Pyodide keeps the snapshot it booted from alive, and the load message holds the image: tens
  // of MiB. Collect them once the machine has settled, rather than carry them in it: a full
  // collection takes ~40 ms, which right away would delay the swap-in's first result.
  delete py._api.config._loadSnapshot;
  setTimeout(collectGarbage, GC_AFTER_LOAD_MS);
  post({ type: 'loaded', id: message.id, notices, timings: clock.times, cpu: { readying: arrived - readyingFrom, load: cpuMs() - arrived } });
}

/**
 * What every boot needs again: streams, the interrupt buffer, the kernel's device, the workspace
 * mount. What the instance says reaches the host only while it is the machine (`current`): a
 * callback of an unloaded one that still runs is heard by no one.
 */
function connect(instance: Pyodide, config: MachineConfig, current: () => boolean): DriverCall {
  const writer = (stream: 'stdout' | 'stderr') => ({
    write(buffer: Uint8Array): number {
      if (current()) host.write(stream, buffer);
      return buffer.length;
    },
  });
  instance.setStdout(writer('stdout'));
  instance.setStderr(writer('stderr'));
  // Typed as an Int32Array; Pyodide only reads and writes its element 0.
  instance.setInterruptBuffer(host.signals as unknown as Int32Array);
  installKernelDevice(instance.FS, {
    send: (message) => current() && host.send(message),
    cellStarted: () => current() && host.cellStarted(),
    awaitAnswer: (n) => (current() ? host.awaitAnswer(n) : undefined),
  });
  let cwd = HOME;
  if (config.workspace) cwd = mountWorkspace(instance, config.workspace);
  // Expressions, not imports: an import would bind its name in the user's namespace. One run
  // (chdir gives None): each costs Pyodide a compile.
  return instance.runPython(`__import__("os").chdir(${JSON.stringify(cwd)}) or ${DRIVER}.call`) as DriverCall;
}

/**
 * Mounts the host folder where the config says, and answers where. A machine whose own files sit
 * at that path (one moved into a folder it once had a copy of) keeps them: the folder goes at
 * /workspace instead, since Pyodide mounts only over an empty folder.
 */
function mountWorkspace(instance: Pyodide, workspace: NonNullable<MachineConfig['workspace']>): string {
  const mount = (at: string) => {
    instance.FS.mkdirTree(at);
    instance.mountNodeFS(at, workspace.hostPath);
    return at;
  };
  const at = workspace.at ?? WORKSPACE;
  try {
    return mount(at);
  } catch (error) {
    if (at === WORKSPACE) throw error;
    return mount(WORKSPACE);
  }
}

type Reply = { ok: true; result: unknown } | { ok: false; error: string };
type Lost = Array<{ name: string; reason: string }>;

async function runCommand(id: number, op: string, args: Record<string, unknown>): Promise<void> {
  post({ type: 'reply', id, ...(await command(op, args)) });
  // A cell changed the machine, which is saved once it is quiet for a second: its patch thread
  // is made ready meanwhile.
  if (op !== 'run') return;
  const base = (await loader).base;
  const { py } = loaded();
  if (base) patchMaker.expect(() => py._module.HEAPU8, base.memory.layout());
}

/** A kernel command's reply. */
async function command(op: string, args: Record<string, unknown>): Promise<Reply> {
  try {
    if (op === 'run') host.cellComing();
    const answer = loaded().call(op, JSON.stringify(args));
    let text: string;
    if (typeof answer === 'string') text = answer;
    else {
      try {
        text = await answer;
      } finally {
        answer.destroy();
      }
    }
    return JSON.parse(text) as Reply;
  } finally {
    host.clearInterrupt();
  }
}

/**
 * Gives the kernel its machine's output limit and the names it may auto-install. The kernel keeps
 * the names across swaps, so they cross into Python only when its set is not this one: parsing
 * them at every restore would leave a few hundred new strings on the heap, and in the next
 * snapshot, at every swap.
 */
async function configure(config: MachineConfig, importNames: ImportNames): Promise<void> {
  const args = { outputLimit: config.outputLimit, importNamesId: importNames.id };
  let reply = await command('configure', args);
  if (reply.ok && !(reply.result as { importNamesKnown: boolean }).importNamesKnown)
    reply = await command('configure', { ...args, importNames: importNames.names });
  if (!reply.ok) throw new Error(`the kernel could not be configured: ${reply.error}`);
}

/** Python holds a JavaScript object, which a snapshot cannot carry. */
class JsObjectHeld extends Error {}

/** Python holds a JavaScript object that only lives in this process: say which one. */
function refuseJsObject(object: unknown): never {
  const kind =
    object === null ? 'null' : typeof object === 'object' || typeof object === 'function' ? (object.constructor?.name ?? typeof object) : typeof object;
  const detail = typeof object === 'function' ? ` ${object.name || '(anonymous)'}` : '';
  throw new JsObjectHeld(`Python holds a JavaScript ${kind}${detail}, which a snapshot cannot carry; drop the reference (del the variable) to allow swapping`);
}

/**
 * Takes the machine's state: its memory (a copy of it, whose patch is made behind), files and
 * what a restore needs beside them. The machine is paused only until `paused` is sent: then it
 * takes commands again while its patch is made on the patch thread, and `image` follows.
 */
async function snapshot(id: number): Promise<void> {
  const clock = new PhaseClock();
  const instance = loaded().py;
  const base = (await loader).base;
  const loadedPackages = { ...instance.loadedPackages };
  let taken: { lost: Lost; memory: TakenMemory; proxied: number[] } | undefined;
  // A full collection of Python's garbage costs a large machine ~25 ms of its pause: the kernel
  // makes one at every tenth snapshot, and again here when the first try finds garbage holding
  // a JavaScript object.
  for (const collect of [false, true]) {
    try {
      const lost = prepareSnapshot(instance, collect);
      clock.lap('sandbox: kernel prepares');
      for (const key of Object.keys(instance.loadedPackages)) delete instance.loadedPackages[key];
      taken = { lost, memory: takeMemory(instance, base, clock), proxied: proxiedObjects(instance._module) };
      break;
    } catch (error) {
      if (collect || !(error instanceof JsObjectHeld)) throw error;
    } finally {
      Object.assign(instance.loadedPackages, loadedPackages);
      instance.runPython(`${DRIVER}.after_snapshot()`);
    }
  }
  const { lost, memory, proxied } = taken!;
  clock.lap('sandbox: kernel resumes');
  const files = archiveFiles(instance.FS, [HOME, '/tmp', instance._api.sitepackages, instance._api.dsodir]);
  clock.lap('sandbox: files archived');
  const meta = {
    pyodideVersion: instance.version,
    dynlibs: recordDynlibs(instance._module),
    loadedPackages,
    tableLength: instance._module.wasmTable.length,
    proxiedObjects: proxied,
  };
  post({ type: 'paused', id, lost, timings: clock.times });
  if ('behind' in memory) {
    const { patch, timings } = await memory.behind;
    post({ type: 'image', id, image: { patch, base: memory.base, files, meta }, timings });
  } else post({ type: 'image', id, image: { ...memory, files, meta }, timings: {} });
}

const patchMaker = new PatchMaker();

/** What the kernel names that the snapshot cannot carry, once it collected garbage (all of it when `collect`). */
function prepareSnapshot(instance: Pyodide, collect: boolean): Lost {
  try {
    return JSON.parse(instance.runPython(`${DRIVER}.prepare_snapshot(${collect ? '' : 'collect=False'})`) as string) as Lost;
  } catch (error) {
    // A kernel of an earlier build that could not be upgraded takes no argument, and collects always.
    if (collect) throw error;
    return prepareSnapshot(instance, true);
  }
}

/** A machine's memory as taken: a copy whose patch on the base is still to be made, or done. */
type TakenMemory = { behind: ReturnType<PatchMaker['make']>; base: string } | { patch: Uint8Array; base: string } | { snapshot: Uint8Array };

/**
 * The machine's memory, as it is now. Where the Pyodide build allows, a copy of its pages in use,
 * whose patch on the base the patch thread makes (only what differs from the base crosses to the
 * host); else a patch made from a whole copy; the whole snapshot for a machine with no base (the
 * base itself). Its dead memory counts as the base's, or as zero.
 */
function takeMemory(instance: Pyodide, base: LoadedBase | undefined, clock: PhaseClock): TakenMemory {
  const module = instance._module;
  let snapshot: Uint8Array;
  if (base) {
    // Pyodide copies the heap from `HEAP8`: hidden, the snapshot is its header alone.
    const heap = module.HEAP8;
    module.HEAP8 = new Int8Array(0);
    try {
      snapshot = instance.makeMemorySnapshot({ serializer: refuseJsObject });
    } finally {
      module.HEAP8 = heap;
    }
  } else snapshot = instance.makeMemorySnapshot({ serializer: refuseJsObject });
  clock.lap('sandbox: header and state');
  const layout = memoryLayout(module);
  if (base && snapshot.length === heapOffset(snapshot)) {
    const memory = module.HEAPU8;
    const behind = patchMaker.make(memory, { header: snapshot, layout, inUse: memoryInUse(memory, layout), base: base.memory.layout() });
    // Awaited once the machine runs on; a failure before that is not an unhandled one.
    behind.catch(() => {});
    clock.lap('sandbox: memory in use copied');
    return { behind, base: base.id };
  }
  // A build that copied the heap all the same.
  const baseBytes = base?.memory.bytes();
  blankDeadMemory(snapshot, baseBytes, layout);
  const taken = baseBytes && base ? { patch: makeMemoryPatch(snapshot, baseBytes), base: base.id } : { snapshot };
  clock.lap('sandbox: compared with the base');
  return taken;
}

/**
 * A process that has been quiet for a second gives its garbage back (its memory is what counts).
 * The second counts from the end of the last message's work: a pooled process's warm-up may take
 * longer than that, and leaves a throwaway machine behind.
 */
let quiet: NodeJS.Timeout | undefined;
let working = 0;
function collectWhenQuiet(): void {
  if (--working > 0) return;
  quiet = setTimeout(collectGarbage, 1000);
  quiet.unref();
}

/** The loaded machine; a command that needs one fails without it. */
function loaded(): NonNullable<typeof machine> {
  if (!machine) throw new Error('no machine is loaded');
  return machine;
}

/**
 * Lets the machine go, for the next one: its instance hears nothing more and is left to the
 * garbage collector, what it changed in the process is undone, and the next instance is booted
 * ahead (on the base, when one was written). Refused while another message is at work, or while
 * the machine left work outside the realm under way (a file or network request): then the host
 * ends the process instead.
 */
async function unload(id: number): Promise<void> {
  const { py } = loaded();
  if (working > 1) throw new Error('the sandbox is busy');
  readyingFrom = cpuMs();
  machine = undefined;
  patchMaker.forget();
  py.setInterruptBuffer(new Int32Array(1));
  host.nextMachine();
  // After every other listener of this message, and what they queued, has run: the last
  // machine's among them, which would otherwise act after the reset.
  await new Promise((resolve) => setOwnImmediate(resolve));
  realm!.reset();
  memoryLimit = Infinity;
  const pending = outsideWork();
  if (pending.length) throw new Error(`the machine left work under way (${pending.join(', ')})`);
  (await loader).again();
  post({ type: 'reply', id, ok: true, result: null });
  // The instance's memory and objects: tens of MiB, garbage now.
  setOwnImmediate(collectGarbage);
}

/** Requests and handles of the process beyond its own (the IPC channel, the patch thread), as Node lists them. */
function outsideWork(): string[] {
  return process.getActiveResourcesInfo().filter((kind) => !OWN_RESOURCES.has(kind));
}
const OWN_RESOURCES = new Set(['PipeWrap', 'Timeout', 'Immediate', 'TTYWrap', 'MessagePort', 'Worker']);

type Handlers = { [Type in HostMessage['type']]: (message: Extract<HostMessage, { type: Type }>) => Promise<void> };
const handlers: Handlers = {
  load,
  prefetch: async (message) => {
    await (await loader).prefetch(message.base);
    post({ type: 'prefetched' });
  },
  call: (message) => runCommand(message.id, message.op, message.args),
  snapshot: (message) => snapshot(message.id),
  exportFiles: async ({ id }) => {
    const { py } = loaded();
    const result: ExportedFiles = { archive: archiveFiles(py.FS, [HOME, '/tmp']), packages: Object.keys(py.loadedPackages) };
    post({ type: 'reply', id, ok: true, result });
  },
  importFiles: async ({ id, archive }) => {
    restoreFiles(loaded().py.FS, archive);
    post({ type: 'reply', id, ok: true, result: null });
  },
  loadPackages: async ({ id, paths }) => {
    const errors: string[] = [];
    await loaded().py.loadPackage(paths, { messageCallback: () => {}, errorCallback: (m) => errors.push(m) });
    post({ type: 'reply', id, ok: errors.length === 0, ...(errors.length ? { error: errors.join('\n') } : { result: null }) } as ChildMessage);
  },
  unload: ({ id }) => unload(id),
};

process.on('message', (message: HostMessage) => {
  clearTimeout(quiet);
  working++;
  void (async () => {
    const id = 'id' in message ? message.id : -1;
    try {
      const handle = handlers[message.type] as ((message: HostMessage) => Promise<void>) | undefined;
      if (!handle) throw new Error(`unknown message ${String(message.type)}`);
      await handle(message);
    } catch (error) {
      const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
      // A Pyodide fatal error leaves the instance unusable: the host restores the machine.
      if (/fatal error/i.test(text) || message.type === 'load') post({ type: 'fatal', error: text.slice(0, 4000) });
      else post({ type: 'reply', id, ok: false, error: text.split('\n')[0]! });
    } finally {
      collectWhenQuiet();
    }
  })();
});

/** What nothing caught leaves the machine in an unknown state: the host restores it. */
function fail(error: unknown): void {
  post({ type: 'fatal', error: (error instanceof Error ? (error.stack ?? error.message) : String(error)).slice(0, 4000) });
  setImmediate(() => process.exit(1));
}
process.on('uncaughtException', fail);
// The host is gone: nothing may outlive it.
process.on('disconnect', () => process.exit(0));
post({ type: 'waiting' });
