/**
 * Environment for the sandbox processes, so that they give freed memory back. glibc raises its
 * thresholds after the first large block is freed, then keeps later large blocks in its heap once
 * freed, where they count as the process's memory: a sandbox kept ~13 MiB of what compiling
 * Pyodide's wasm had freed. A fixed threshold gives blocks from 32 KiB up pages of their own,
 * returned when freed. Other C libraries ignore the variable.
 */
export const SANDBOX_MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '32768' } as const;

/**
 * The same for the server, from 8 KiB: on Node 24 what it freed after its first sandbox machine
 * (the base image built and stored) stayed in glibc's heap in blocks between 8 and 32 KiB, ~26 MiB
 * for good (Node 24.21: 113 MiB at a 32 KiB threshold, 87 at 8 KiB, 88 at 4 KiB). The server
 * allocates little between snapshots, so the system calls a lower threshold costs are few (the
 * MCP and swap-in figures of `bench footprint` did not move).
 */
export const SERVER_MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '8192' } as const;

/** `process.execve`, from Node 22.15 and 23.11 on POSIX systems. */
type Execve = (file: string, args: string[], env: NodeJS.ProcessEnv) => never;

/**
 * A server a person starts (`perennial serve`, `npm start`) did not get SERVER_MALLOC_ENV from the
 * client that starts servers, and glibc reads it only as a process starts: this process starts
 * over in place with it (same pid, same terminal), where the runtime can (Linux, Node 22.15+). A
 * server that built its first base image held ~35 MB more without it.
 */
export function restartWithMallocEnv(): void {
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (process.platform !== 'linux' || !execve) return;
  if (Object.keys(SERVER_MALLOC_ENV).every((name) => process.env[name] !== undefined)) return;
  execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], { ...process.env, ...SERVER_MALLOC_ENV });
}
