import type { MachineInfo } from '../shared/types.ts';
import type { MachineStore } from './machine-store.ts';
import type { MachineRoom } from './warm-policy.ts';

/** What whoever ran a machine last left undone when it stopped unexpectedly (see `MachineCustody.attach`). */
export interface UncleanStop {
  /** What to say of the stop. */
  stopped?: string;
  /** In a cluster: the instruction numbers the node that ran it gave out after its last commit, whose effects are gone. */
  given?: { from: number; to: number };
}

/**
 * The side of a manager that a home beyond its data dir (a cluster's node, `src/cluster/`) works
 * with, apart from what every surface calls: which machines are the manager's now, the folders
 * they come in and go out through, taking one on and letting one go, and how much more it can
 * keep warm. On one computer nothing calls it.
 */
export interface MachineCustody {
  /** Whether the machine is the manager's now. */
  has(name: string): boolean;
  /** The machines' folders in the data dir. */
  readonly store: MachineStore;
  /**
   * Takes on the machine the data dir's folder `name` holds, which the home has just put there
   * (or found there, made before the data dir joined it); `unclean` when whoever ran it last
   * stopped unexpectedly: the next result says so, and each lost instruction's history too.
   */
  attach(name: string, unclean?: UncleanStop): Promise<MachineInfo>;
  /**
   * Lets the machine go without saving it: another node owns it now (nothing done since its last
   * commit is kept: `reason` says so to whoever follows the events), or it was saved to go.
   */
  detach(name: string, reason?: string): Promise<void>;
  /** Tells whoever follows the events what happened to machine `name`, which is not the manager's (its folder kept aside). */
  tell(name: string, message: string): void;
  /** How much more the manager can keep warm, for placing machines among nodes. */
  room(): MachineRoom;
}
