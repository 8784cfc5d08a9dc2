/** Small helpers the benchmarks share: timing, percentiles and memory. */
import { readdirSync, readFileSync } from 'node:fs';

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function median(samples: number[]): number {
  return percentile(samples, 50);
}

export async function timeIt(task: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await task();
  return performance.now() - start;
}

export function ms(value: number): string {
  return `${value.toFixed(value < 10 ? 3 : 1)} ms`;
}

export function kib(bytes: number): string {
  return bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

export function row(label: string, ...cells: string[]): void {
  console.log(`  ${label.padEnd(62)}${cells.map((c) => c.padStart(14)).join('  ')}`);
}

/**
 * Memory of a process and all its descendants (bwrap, its init, node and its threads), in bytes:
 * `rss`, `pss` (each shared page divided among the processes that map it), or `private` (USS:
 * what no other process shares; RSS also counts the pages of the node binary and libraries that
 * every Node process on the host maps, so it overstates what one more process adds).
 * `descendants` false: the process alone.
 */
export function treeMemory(pid: number, kind: 'rss' | 'pss' | 'private' = 'rss', descendants = true): number {
  const pattern = { rss: /^Rss:\s+(\d+) kB/gm, pss: /^Pss:\s+(\d+) kB/gm, private: /^Private_(?:Clean|Dirty):\s+(\d+) kB/gm }[kind];
  let total = 0;
  const visit = (p: number) => {
    try {
      for (const match of readFileSync(`/proc/${p}/smaps_rollup`, 'utf8').matchAll(pattern)) total += Number(match[1]) * 1024;
      if (!descendants) return;
      for (const child of childPids(p)) visit(child);
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return total;
}

/** A process's children. */
export function childPids(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((task) =>
      readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}
