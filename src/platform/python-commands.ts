import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The commands that may start Python on this system, the likeliest first. On Windows the `py`
 * launcher comes first: `python3` is seldom a command there, and `python` may be the Microsoft
 * Store's stand-in, which opens the Store and runs nothing.
 */
export function pythonCommands(platform: NodeJS.Platform = process.platform): string[][] {
  return platform === 'win32' ? [['py', '-3'], ['python'], ['python3']] : [['python3'], ['python']];
}

/** The interpreter of the active virtual or conda environment, if one is active and has it. */
export function environmentPython(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | undefined {
  const prefix = env.VIRTUAL_ENV || env.CONDA_PREFIX;
  if (!prefix) return undefined;
  // A venv keeps it in Scripts on Windows, a conda environment at its top.
  const places = platform === 'win32' ? [join(prefix, 'Scripts', 'python.exe'), join(prefix, 'python.exe')] : [join(prefix, 'bin', 'python')];
  return places.find((path) => existsSync(path));
}

/** An interpreter a command starts: its own path (resolved by Python) and version. */
export interface FoundPython {
  executable: string;
  version: string;
}

/** Prints where the interpreter is and its version; exits 3 when it is too old for the kernel. */
const PROBE = 'import sys; print(sys.executable); print("%d.%d.%d" % sys.version_info[:3]); sys.exit(0 if sys.version_info >= (3, 8) else 3)';
const PROBE_TIMEOUT_MS = 15_000;

/** The interpreter `command args` starts, if it runs Python 3.8 or newer; else why not, in words. */
export function probePython(command: string, args: string[] = []): Promise<FoundPython | string> {
  return new Promise((resolve) => {
    execFile(command, [...args, '-c', PROBE], { encoding: 'utf8', timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (error, stdout, stderr) => {
      const [executable, version] = stdout.trim().split(/\r?\n/);
      // A string where the command could not run (ENOENT), its exit status where it ran.
      const code = (error as { code?: unknown } | null)?.code;
      if (code === 'ENOENT') return resolve('not found');
      if (code === 3) return resolve(`Python ${version}, older than 3.8`);
      if (error || !version) {
        const last = stderr.trim().split(/\r?\n/).at(-1);
        return resolve(`${typeof code === 'number' ? `exit ${code}` : (error?.message.split('\n')[0] ?? 'no version')}${last ? `, ${last}` : ''}`);
      }
      resolve({ executable: executable || command, version });
    });
  });
}
