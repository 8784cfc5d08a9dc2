import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PLACEMENT_MARGIN_BYTES, placeOn } from '../../src/cluster/placement.ts';
import type { LiveNode } from '../../src/cluster/directory.ts';

const GIB = 2 ** 30;
/** A node on a computer of its own, unless `computer` names one it shares. */
const node = (id: string, bytes: number | null, extra: Partial<LiveNode> & { warm?: number; maxWarm?: number; computer?: string } = {}): LiveNode => ({
  id,
  url: `http://${id}`,
  draining: extra.draining ?? false,
  room:
    bytes === null
      ? null
      : { bytes, warm: extra.warm ?? 0, computer: extra.computer ?? `computer-${id}`, ...(extra.maxWarm === undefined ? {} : { maxWarm: extra.maxWarm }) },
});

/** Where a machine no node runs goes: the node asked while it has room, else the roomiest. */
describe('placement by load', () => {
  it('keeps a machine on the node asked unless another has clearly more room', () => {
    assert.equal(placeOn([node('a', 4 * GIB), node('b', 4 * GIB + PLACEMENT_MARGIN_BYTES - 1)], 'a'), undefined);
    assert.equal(placeOn([node('a', 4 * GIB), node('b', 4 * GIB + PLACEMENT_MARGIN_BYTES)], 'a')?.id, 'b');
  });

  it('between nodes on one computer, moves it only from a node without room: their memory is the same', () => {
    assert.equal(placeOn([node('a', 1 * GIB, { computer: 'one' }), node('b', 9 * GIB, { computer: 'one' })], 'a'), undefined);
    assert.equal(placeOn([node('a', -1, { computer: 'one' }), node('b', 1 * GIB, { computer: 'one' })], 'a')?.id, 'b');
  });

  it('sends it from a node short of memory or at its warm cap to the node with room that has the most', () => {
    const others = [node('b', 1 * GIB), node('c', 3 * GIB), node('d', 9 * GIB, { warm: 4, maxWarm: 4 })];
    assert.equal(placeOn([node('a', -1), ...others], 'a')?.id, 'c');
    assert.equal(placeOn([node('a', 8 * GIB, { warm: 2, maxWarm: 2 }), ...others], 'a')?.id, 'c');
  });

  it('keeps it on the node asked when no node has room, or when it cannot judge', () => {
    assert.equal(placeOn([node('a', -1), node('b', -5)], 'a'), undefined);
    assert.equal(placeOn([node('a', null), node('b', 9 * GIB)], 'a'), undefined, 'its own room not known yet');
    assert.equal(placeOn([node('a', -1), node('b', null)], 'a'), undefined, 'a node of an earlier build says no room: it gets nothing it was not asked for');
  });

  it('never places on a draining node, and sends from one even when nowhere has room', () => {
    assert.equal(placeOn([node('a', 9 * GIB), node('b', 1 * GIB, { draining: true })], 'a'), undefined);
    assert.equal(placeOn([node('a', 9 * GIB, { draining: true }), node('b', -1)], 'a')?.id, 'b');
    assert.equal(placeOn([node('a', 9 * GIB, { draining: true })], 'a'), undefined, 'alone, it keeps what it is asked for');
  });
});
