/**
 * The sandbox's patch thread: makes a snapshot's patch from a copy of the machine's memory taken
 * at the pause, while the machine runs on (see `PatchMaker`). It runs only this code.
 */
import './harden.ts';
import { parentPort } from 'node:worker_threads';
import { PhaseClock } from '../../../platform/phase-timings.ts';
import { deadRanges } from './dead-memory.ts';
import { BaseMemory, DifferingLines } from './heap-pages.ts';
import type { PatchJob, PatchAnswer } from './patch-maker.ts';

/** Kept from one patch to the next: see `DifferingLines`. */
const lines = new DifferingLines();
const NOTHING = new Uint8Array(0);

parentPort!.on('message', ({ id, heap, header, layout, inUse, base }: PatchJob) => {
  const clock = new PhaseClock();
  let answer: PatchAnswer;
  try {
    new BaseMemory(base).differingLines(heap, lines, inUse);
    clock.lap('sandbox, behind: compared with the base');
    const dead = (deadRanges(heap, layout) ?? []).sort((a, b) => a[0] - b[0]);
    clock.lap('sandbox, behind: dead memory found');
    const patch = lines.patch(header, dead);
    clock.lap('sandbox, behind: patch made');
    answer = { id, patch, timings: clock.times, heap };
  } catch (error) {
    answer = { id, error: error instanceof Error ? error.message : String(error), heap };
  } finally {
    // The copy goes back, to be filled at the next snapshot: nothing here may hold it.
    lines.reset(NOTHING);
  }
  parentPort!.postMessage(answer, ['patch' in answer ? [answer.patch.buffer as ArrayBuffer] : [], heap.buffer as ArrayBuffer].flat());
});
