import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Where a shell finds command `name` on `PATH`, if it does: a file it may run, tried with each of
 * `PATHEXT`'s extensions on Windows (npm puts `name.cmd` there), as is elsewhere.
 */
export function commandOnPath(name: string, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | undefined {
  const windows = platform === 'win32';
  // Windows spells the variable as it likes (Path); its lookup ignores case.
  const path = windows ? Object.entries(env).find(([key]) => key.toUpperCase() === 'PATH')?.[1] : env.PATH;
  const extensions = windows ? (env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').filter(Boolean) : [''];
  for (const dir of (path ?? '').split(windows ? ';' : delimiter).filter(Boolean)) {
    for (const extension of extensions) {
      const file = join(dir, `${name}${extension}`);
      try {
        if (!statSync(file).isFile()) continue;
        if (!windows) accessSync(file, constants.X_OK);
        return file;
      } catch {
        // Not there, or not runnable: the next.
      }
    }
  }
  return undefined;
}
