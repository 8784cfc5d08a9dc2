import type { ClusterStatus, MachineEvent, MachineInfo } from '../shared/types.ts';
import type { MachineManifest } from './machine-store.ts';

/**
 * Where a manager's machines are kept beyond its data dir, and which of them it may run. On one
 * computer the data dir is their home (`DATA_DIR_HOME`): every machine in it is the manager's. In
 * a cluster (`src/cluster/`) their home is a bucket and a directory of owners: the data dir is a
 * cache, and a machine is the manager's only once the home has handed it over.
 */
export interface MachineHome {
  /** Whether every machine in the data dir is the manager's from the start. */
  readonly ownsDataDir: boolean;
  /** Whether a machine beyond the data dir has or had `name` (a deleted machine's name is never given again). */
  isUsed(name: string): Promise<boolean>;
  /** Records a machine made here (created or forked); false when another took the name first. */
  claim(manifest: MachineManifest): Promise<boolean>;
  /**
   * Called before one of the machine's instruction numbers is given out. Throws a
   * MachineMovedError when the manager may no longer run the machine: no number it gives may
   * be one the machine's new owner gives too.
   */
  reserve(name: string): Promise<void>;
  /**
   * Keeps the machine's saved state, which its folder now holds (called in the machine's turn,
   * after a save, a checkpoint, a rollback). Throws a MachineMovedError when the manager may no
   * longer run the machine.
   */
  commit(manifest: MachineManifest, folder: string): Promise<void>;
  /** Records that the machine was deleted. */
  retire(name: string): Promise<void>;
  /** In a cluster: where the manager's node is reached, which listings give as its machines' `node`. */
  readonly url?: string;
  /** The machines beyond this manager (on other nodes, or none now), for listings: each with `node`, the node that runs it. */
  elsewhere(): Promise<MachineInfo[]>;
  /** The cluster the manager serves, for its status; none on one computer. */
  cluster(): Promise<ClusterStatus | undefined>;
  /** Calls `listener` with each change to the machines beyond this manager (other nodes'), until the answer is called. */
  watch(listener: (event: MachineEvent) => void): () => void;
}

/** One computer: the data dir is the machines' home, and nothing is kept elsewhere. */
export const DATA_DIR_HOME: MachineHome = {
  ownsDataDir: true,
  isUsed: async () => false,
  claim: async () => true,
  reserve: async () => {},
  commit: async () => {},
  retire: async () => {},
  elsewhere: async () => [],
  cluster: async () => undefined,
  watch: () => () => {},
};
