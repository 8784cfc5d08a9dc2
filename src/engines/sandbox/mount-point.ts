import { posix, win32 } from 'node:path';

/** Where a mounted workspace sits when the host's own path cannot be used. */
export const WORKSPACE = '/workspace';

/** Pyodide's own tree: a host folder is never mounted over it. */
const PYODIDE_TREE = ['/lib', '/dev', '/proc', '/home/pyodide', '/usr', '/bin'];

/**
 * Where a host folder the machine works in (a notebook's) is mounted in a sandbox machine: at
 * the same path on Linux and macOS, so that a path printed in the machine and pasted on the host
 * (or the other way) names the same file; a Windows path as MSYS writes it (`C:\Users\ada` is
 * `/c/Users/ada`). A folder that would cover Pyodide's own files, or the root, goes at /workspace.
 */
export function mountPoint(hostPath: string, platform: NodeJS.Platform = process.platform): string {
  const path = platform === 'win32' ? msysPath(hostPath) : posix.normalize(hostPath).replace(/(.)\/+$/, '$1');
  if (!path || path === '/' || ['/tmp', ...PYODIDE_TREE].includes(path)) return WORKSPACE;
  return PYODIDE_TREE.some((top) => path.startsWith(`${top}/`)) ? WORKSPACE : path;
}

function msysPath(hostPath: string): string | null {
  const { root } = win32.parse(hostPath);
  const drive = /^([A-Za-z]):\\?$/.exec(root);
  if (!drive) return null; // a UNC share has no drive letter
  const rest = win32.normalize(hostPath).slice(root.length).split('\\').filter(Boolean);
  return posix.join('/', drive[1]!.toLowerCase(), ...rest);
}
