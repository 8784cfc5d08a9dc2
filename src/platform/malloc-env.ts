/**
 * Environment for Node processes Perennial starts, so that they give freed memory back. glibc
 * raises its thresholds after the first large block is freed, then keeps later large blocks in
 * its heap once freed, where they count as the process's memory: a server that built a sandbox
 * base image stayed 3 to 24 MB larger, and a sandbox kept ~13 MiB of what compiling Pyodide's
 * wasm had freed. A fixed threshold gives blocks from 32 KiB up pages of their own, returned when
 * freed. Other C libraries ignore the variable.
 */
export const MALLOC_ENV = { MALLOC_MMAP_THRESHOLD_: '32768' } as const;
