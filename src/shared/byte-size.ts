/** A size in bytes as people read it: KiB below a MiB, MiB above, one decimal. */
export function byteSize(bytes: number): string {
  return bytes < 1 << 20 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / (1 << 20)).toFixed(1)} MiB`;
}
