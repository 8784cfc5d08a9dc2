import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Where machines live: `PERENNIAL_HOME`, else the platform's per-user data folder
 * (`$XDG_DATA_HOME/perennial` or `~/.local/share/perennial` on Linux).
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.PERENNIAL_HOME) return env.PERENNIAL_HOME;
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', 'perennial');
  if (process.platform === 'win32') return join(env.LOCALAPPDATA ?? join(homedir(), 'AppData', 'Local'), 'perennial');
  return join(env.XDG_DATA_HOME || join(homedir(), '.local', 'share'), 'perennial');
}
