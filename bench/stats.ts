/** Small helpers the benchmarks share: timing and percentiles. */

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
  console.log(`  ${label.padEnd(46)}${cells.map((c) => c.padStart(14)).join('')}`);
}
