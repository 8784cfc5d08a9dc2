/** Whether a process with this pid exists (it may belong to another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * The Jupyter process that started this kernel (`JPY_PARENT_PID`), to stop with it. On Windows
 * Jupyter puts a process handle there rather than a pid: nothing to watch by pid.
 */
export function jupyterParentPid(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): number | null {
  const pid = Number(env.JPY_PARENT_PID);
  return platform !== 'win32' && Number.isInteger(pid) && pid > 1 ? pid : null;
}
