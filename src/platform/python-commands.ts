/**
 * The commands that may start Python on this system, the likeliest first. On Windows the `py`
 * launcher comes first: `python3` is seldom a command there, and `python` may be the Microsoft
 * Store's stand-in, which opens the Store and runs nothing.
 */
export function pythonCommands(platform: NodeJS.Platform = process.platform): string[][] {
  return platform === 'win32' ? [['py', '-3'], ['python'], ['python3']] : [['python3'], ['python']];
}
