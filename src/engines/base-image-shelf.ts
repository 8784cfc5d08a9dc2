/**
 * Where sandbox base images are shared beyond the data dir: a cluster's bucket. A machine's memory
 * is stored as a patch on a base, which every node that runs the machine must have exactly; so
 * the first node to need a base makes it, and every other node reads that one.
 */
export interface BaseImageShelf {
  /**
   * Runs `ensure`, which reads the image at `path` or makes it there, once the shelf's copy of
   * `key` (if it has one) is at `path`; when the shelf had none, it keeps the image `ensure` left.
   * One node at a time per key.
   */
  provide<T>(key: string, path: string, ensure: () => Promise<T>): Promise<T>;
}
