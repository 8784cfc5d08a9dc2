import type { ExecResult, LostItem, ResultData } from '../shared/types.ts';
import type { InstructionQueue } from './instruction-queue.ts';
import type { MachineManifest } from './machine-store.ts';

/**
 * What a machine's next result must tell the person beside its own outcome: a restart that lost
 * state, a kernel upgraded or not, variables a restore could not bring back. Nothing is dropped
 * unsaid: each is given once, to the next result.
 */
export class MachineNotices {
  #notices: string[] = [];
  #lost: LostItem[] = [];

  constructor(
    private readonly manifest: MachineManifest,
    private readonly queue: InstructionQueue,
  ) {}

  add(...notices: string[]): void {
    this.#notices.push(...notices);
  }

  addLost(item: LostItem): void {
    this.#lost.push(item);
  }

  /** `result` with what is waiting to be said, which is then said. */
  attach(result: ExecResult): ExecResult {
    if (!this.#notices.length && !this.#lost.length) return result;
    const data: ResultData = { ...(result.data ?? {}) };
    if (this.#lost.length) data.lost = [...this.#lost, ...(data.lost ?? [])];
    if (this.#notices.length) data.notices = [...this.#notices];
    this.#notices = [];
    this.#lost = [];
    return { ...result, data } as ExecResult;
  }

  /** Where a machine whose process was lost comes back from, and which instructions' effects it loses. */
  restoreNotice(): string {
    const snapshot = this.manifest.snapshot;
    if (!snapshot) return 'The machine starts again empty: it had no snapshot yet.';
    const completed = this.queue.completedSeq;
    const lost = completed >= snapshot.seq ? ` Effects of instructions ${snapshot.seq}–${completed} are lost.` : '';
    return `The machine goes back to its snapshot of ${snapshot.at}.${lost}`;
  }

  /**
   * When the data dir's previous owner (or the node that ran the machine, `stopped` says) stopped
   * without saving: which instructions' effects did not survive, and why, when it could say.
   * Answers whether it did stop so.
   */
  uncleanStop(stopped = 'The server stopped unexpectedly.'): boolean {
    const unsaved = this.manifest.unsaved;
    if (unsaved) this.add(`When the server stopped (${unsaved.at}), this machine could not be saved: ${unsaved.reason}. ${this.restoreNotice()}`);
    else if (this.queue.completedSeq >= (this.manifest.snapshot?.seq ?? 0)) this.add(`${stopped} ${this.restoreNotice()}`);
    else return false;
    return true;
  }
}
