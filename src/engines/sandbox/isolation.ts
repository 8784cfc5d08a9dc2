import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, relative } from 'node:path';
import { SANDBOX_MALLOC_ENV } from '../../platform/malloc-env.ts';
import type { SandboxMount } from './protocol.ts';

/** How a sandbox process is locked down on this host. */
export interface Isolation {
  /** bubblewrap namespaces: no network, no host files, own pid namespace, clean environment. */
  bubblewrap: boolean;
  /** The Node permission model: no child processes, addons, inspector, or files beyond the allowed. */
  permissionModel: true;
  /** Plain words for status and create results when something is off. */
  warning: string | null;
}

export interface SandboxLaunch {
  /** The built sandbox process's folder. */
  childDir: string;
  pyodideDir: string;
  /** Read-only wheel cache. */
  packageDir?: string;
  /** Read-only base images' memory. */
  memoryDir?: string;
  workspace?: SandboxMount;
  /** The process's mailbox folder (mailbox.ts), read-only inside. */
  mailboxDir: string;
  /** Let the machine reach the network (off by default: closed in the process, and by bubblewrap where it works). */
  network: boolean;
}

let probed: { works: boolean; reason: string } | undefined;

/**
 * Whether sandbox processes get bubblewrap: on Linux, where it must work (it needs user
 * namespaces), unless `PERENNIAL_SANDBOX_BUBBLEWRAP=off` turns it off. The probe runs once per process.
 */
export function detectIsolation(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): Isolation {
  if (platform !== 'linux')
    return { bubblewrap: false, permissionModel: true, warning: withoutBubblewrap(`there is no bubblewrap on ${systemName(platform)}`) };
  if (env.PERENNIAL_SANDBOX_BUBBLEWRAP === 'off') {
    return { bubblewrap: false, permissionModel: true, warning: withoutBubblewrap('bubblewrap is turned off (PERENNIAL_SANDBOX_BUBBLEWRAP=off)') };
  }
  if (!probed) {
    const probe = spawnSync('bwrap', ['--unshare-all', '--die-with-parent', '--ro-bind', '/', '/', 'true'], { stdio: 'ignore', timeout: 10_000 });
    probed = {
      works: probe.status === 0,
      reason: probe.error ? 'bubblewrap (bwrap) is not installed' : `bubblewrap cannot create namespaces here (exit ${probe.status})`,
    };
  }
  return { bubblewrap: probed.works, permissionModel: true, warning: probed.works ? null : withoutBubblewrap(probed.reason) };
}

/** What confines a sandbox machine when bubblewrap does not, and what it lacks. */
function withoutBubblewrap(reason: string): string {
  return (
    `${reason}: sandbox machines are confined by Node's permission model (files, processes, addons) and have no network unless made with it, ` +
    'both enforced inside the sandbox process; no operating-system fence (namespaces) stands behind them'
  );
}

function systemName(platform: NodeJS.Platform): string {
  return ({ darwin: 'macOS', win32: 'Windows' } as Partial<Record<NodeJS.Platform, string>>)[platform] ?? platform;
}

/**
 * The permission model's flags on this Node, read from the flags it knows: the model itself
 * (`--permission` from Node 22.13/23.5, before that experimental), and the network for a machine
 * made with it where the model covers the network (Node 25 on: TCP, UDP, DNS and Unix sockets are
 * refused without `--allow-net`). A machine made without it has the flag on no line.
 */
export function permissionFlags(network: boolean, known: ReadonlySet<string> = process.allowedNodeEnvironmentFlags): string[] {
  return [known.has('--permission') ? '--permission' : '--experimental-permission', ...(network && known.has('--allow-net') ? ['--allow-net'] : [])];
}

/**
 * V8's stack limit for the sandbox's thread, in KiB. Pyodide's C recursion (repr of nested
 * objects, json) runs on it: 4 MiB less V8's own reserve, as Node gives a worker thread, when the
 * process's stack may grow that far (the default limit is 8 MiB); less when it may not.
 */
function stackSizeKb(): number {
  const wanted = 4096 - 192;
  let limits = '';
  try {
    limits = readFileSync('/proc/self/limits', 'utf8');
  } catch {
    // Not Linux: the usual 8 MiB.
  }
  const limit = /^Max stack size\s+(\d+)/m.exec(limits)?.[1];
  return limit ? Math.min(wanted, Math.floor(Number(limit) / 1024) - 256) : wanted;
}

/**
 * A sandbox process's environment, clean: nothing of the user's (tokens, paths) reaches the
 * machine. glibc's per-thread arenas would hold ~40 MiB of V8's freed memory per machine: keep
 * two, and give freed memory back, to the last page: ~2 MiB less per process than a 1 MiB
 * threshold, for 1–2 ms on a 45 ms fib(27) (measured; V8's compiler allocates here, Python does
 * not). Under Electron (a server VS Code started, on its own runtime) the executable is Electron's,
 * which runs as Node only when told so.
 */
export function sandboxEnv(electron: boolean): NodeJS.ProcessEnv {
  return {
    PATH: '/usr/bin:/bin',
    MALLOC_ARENA_MAX: '2',
    MALLOC_TRIM_THRESHOLD_: '0',
    MALLOC_TOP_PAD_: '0',
    ...SANDBOX_MALLOC_ENV,
    ...(electron ? { ELECTRON_RUN_AS_NODE: '1' } : {}),
  };
}

/**
 * The folders of `dirs` that none of the others holds. Node's permission model loses a granted
 * folder itself (not what it holds) once a folder in it is granted too: a notebook's folder that
 * holds Perennial's data dir, or Pyodide's install, could not be mounted.
 */
function outermost(dirs: string[]): string[] {
  const inside = (dir: string, other: string) => {
    const path = relative(other, dir);
    return path !== '' && !path.startsWith('..') && !isAbsolute(path);
  };
  return [...new Set(dirs)].filter((dir) => !dirs.some((other) => inside(dir, other)));
}

/** How a sandbox process starts: bubblewrap (when it works) around Node's permission model, in a clean environment. */
export function sandboxCommand(launch: SandboxLaunch, isolation: Isolation): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  const node = realpathSync(process.execPath);
  const electron = 'electron' in process.versions;
  const readable = [launch.childDir, launch.pyodideDir, launch.mailboxDir, ...[launch.packageDir, launch.memoryDir].filter((dir) => dir !== undefined)];
  const nodeArgs = [
    ...permissionFlags(launch.network),
    // `dir/*` grants the folder itself too; giving both forms trips an assertion in Node 20.
    ...outermost([...readable, ...(launch.workspace ? [launch.workspace.hostPath] : [])]).map((dir) => `--allow-fs-read=${dir.replace(/[\\/]$/, '')}/*`),
    ...(launch.workspace?.writable ? [`--allow-fs-write=${launch.workspace.hostPath}/*`] : []),
    // The process makes a snapshot's patch on a thread of its own (see child/harden.ts).
    '--allow-worker',
    // One machine per process: a single V8 background thread is enough, and each thread costs
    // memory (its stack and its malloc arena).
    '--v8-pool-size=1',
    // Python reaching the JS heap through `js` ends this process, not the host.
    '--max-old-space-size=512',
    `--stack-size=${stackSizeKb()}`,
    // V8 keeps its young generation committed; a machine allocates little on the JS side, and a
    // 1 MiB semi-space saves ~20 MiB per machine (measured) at no cost to Python's speed.
    '--max-semi-space-size=1',
    '--expose-gc',
    '--no-warnings',
    `${launch.childDir.replace(/\/$/, '')}/main.js`,
    launch.pyodideDir,
    launch.mailboxDir,
    ...(launch.network ? ['--network'] : []),
  ];
  const env = sandboxEnv(electron);
  if (!isolation.bubblewrap) return { command: node, args: nodeArgs, env };
  const binds = [
    // Electron's executable reads its V8 snapshot, ICU data and libraries from its own folder.
    ...[electron ? dirname(node) : node, '/lib', '/lib64', '/usr/lib', '/usr/lib64', ...readable]
      .filter((path) => existsSync(path))
      .map((path) => ({ path, flag: '--ro-bind' })),
    ...(launch.workspace ? [{ path: launch.workspace.hostPath, flag: launch.workspace.writable ? '--bind' : '--ro-bind' }] : []),
  ];
  // A folder before the folders in it, which keep their own binding: Pyodide's install in a
  // person's folder (a checkout of theirs) stays read-only in it.
  binds.sort((a, b) => a.path.length - b.path.length);
  const args = [
    '--unshare-all',
    // No reaper process: nothing in the sandbox may start a process, so there is nothing to reap.
    '--as-pid-1',
    ...(launch.network ? ['--share-net'] : []),
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    // First, so that binds below /tmp stay visible.
    '--tmpfs',
    '/tmp',
    ...binds.flatMap(({ path, flag }) => [flag, path, path]),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--chdir',
    '/',
    node,
    ...nodeArgs,
  ];
  return { command: 'bwrap', args, env };
}
