/**
 * The sandbox's patch thread: makes a snapshot's patch from a copy of the machine's memory taken
 * at the pause, while the machine runs on, and room for the next copy (see `PatchMaker`). It runs
 * only this code.
 */
import './harden.ts';
import { parentPort } from 'node:worker_threads';
import { PhaseClock } from '../../../platform/phase-timings.ts';
import { deadRanges } from './dead-memory.ts';
import { BaseMemory, DifferingLines, PAGE, type BaseMemoryLayout } from './heap-pages.ts';
import type { PatchAnswer, PatchJob, PatchRequest } from './patch-maker.ts';

/** Kept from one patch to the next: see `DifferingLines`. */
const lines = new DifferingLines();
const NOTHING = new Uint8Array(0);
const WARM_UP_BYTES = 4 << 20;

parentPort!.on('message', (request: PatchRequest) => {
  if (request.type === 'room') {
    const room = new Uint8Array(request.length);
    // Each page written once now, so that the copy at the pause takes no fault.
    for (let at = 0; at < room.length; at += PAGE) room[at] = 0;
    warmUp(room, request.base);
    parentPort!.postMessage({ type: 'room', room } satisfies PatchAnswer, [room.buffer]);
    return;
  }
  const answer = patch(request);
  parentPort!.postMessage(answer, ['patch' in answer ? [answer.patch.buffer as ArrayBuffer] : [], request.heap.buffer as ArrayBuffer].flat());
});

/**
 * Runs the comparison and the patch's loops once over the start of the empty room, which differs
 * from the base wherever the base is not zero: a thread's first patch would otherwise run them
 * before V8 optimizes them, three times slower (measured).
 */
function warmUp(room: Uint8Array, base: BaseMemoryLayout): void {
  try {
    new BaseMemory(base).differingLines(room, lines, [[0, Math.min(room.length, WARM_UP_BYTES)]]);
    lines.patch(new Uint8Array(8), []);
  } catch {
    // Only time is at stake: the first patch says what is wrong, if anything is.
  } finally {
    lines.reset(NOTHING);
  }
}

function patch({ id, heap, header, layout, inUse, base }: PatchJob): PatchAnswer {
  const clock = new PhaseClock();
  try {
    new BaseMemory(base).differingLines(heap, lines, inUse);
    clock.lap('sandbox, behind: compared with the base');
    const dead = (deadRanges(heap, layout) ?? []).sort((a, b) => a[0] - b[0]);
    clock.lap('sandbox, behind: dead memory found');
    const made = lines.patch(header, dead);
    clock.lap('sandbox, behind: patch made');
    return { type: 'patch', id, heap, patch: made, timings: clock.times };
  } catch (error) {
    return { type: 'patch', id, heap, error: error instanceof Error ? error.message : String(error) };
  } finally {
    // The copy goes back, to be filled at the next snapshot: nothing here may hold it.
    lines.reset(NOTHING);
  }
}
