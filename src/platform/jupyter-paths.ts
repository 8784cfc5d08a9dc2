import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Jupyter's data folders, where kernelspecs live (`<folder>/kernels/<name>/kernel.json`), as
 * jupyter_core finds them on each system, without asking Python: its own `JUPYTER_DATA_DIR` or
 * the user's, then `JUPYTER_PATH`, the active environment's, and the system's.
 */
export interface JupyterFolders {
  user: string;
  /** The active virtual or conda environment's `share/jupyter` (`--sys-prefix`), if one is active. */
  environment: string | null;
  /** Every folder Jupyter looks in, in its order. */
  searched: string[];
}

export function jupyterFolders(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): JupyterFolders {
  const user = env.JUPYTER_DATA_DIR || userDataFolder(env, platform);
  const prefix = env.VIRTUAL_ENV || env.CONDA_PREFIX;
  const environment = prefix ? prefixFolder(prefix) : null;
  const separator = platform === 'win32' ? ';' : ':';
  const extra = (env.JUPYTER_PATH ?? '').split(separator).filter(Boolean);
  const system = platform === 'win32' ? [join(env.PROGRAMDATA ?? 'C:\\ProgramData', 'jupyter')] : ['/usr/local/share/jupyter', '/usr/share/jupyter'];
  return { user, environment, searched: [...new Set([...extra, user, ...(environment ? [environment] : []), ...system])] };
}

/** `<prefix>/share/jupyter`: `--prefix DIR`, or an environment's. */
export function prefixFolder(prefix: string): string {
  return join(prefix, 'share', 'jupyter');
}

function userDataFolder(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string {
  if (platform === 'darwin') return join(homedir(), 'Library', 'Jupyter');
  if (platform === 'win32') return join(env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'), 'jupyter');
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'jupyter');
}
