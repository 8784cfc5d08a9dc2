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
  console.log(`  ${label.padEnd(52)}${cells.map((c) => c.padStart(14)).join('  ')}`);
}

/** RSS of a process and all its descendants (bwrap, its init, node and its threads), in bytes; `descendants` false: the process alone. */
export function treeRss(pid: number, descendants = true): number {
  let total = 0;
  const visit = (p: number) => {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) * 1024;
      if (!descendants) return;
      for (const task of readdirSync(`/proc/${p}/task`)) {
        for (const child of readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) visit(Number(child));
      }
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return total;
}
