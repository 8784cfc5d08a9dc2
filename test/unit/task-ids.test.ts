import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TaskIds } from '../../src/mcp/tasks/task-ids.ts';

describe('task ids', () => {
  const ids = new TaskIds('the data dir token');

  it('name the machine and the instruction, the same from every connection and after a restart', () => {
    const id = ids.forInstruction('brave-otter', 17);
    assert.equal(id, new TaskIds('the data dir token').forInstruction('brave-otter', 17));
    assert.deepEqual(ids.read(id), { kind: 'instruction', machine: 'brave-otter', seq: 17 });
    assert.deepEqual(ids.read(ids.forInstruction('a.b_ü', 0)), { kind: 'instruction', machine: 'a.b_ü', seq: 0 });
  });

  it('cannot be made without the key: another instruction, machine or key is not read', () => {
    const [kind, machine, , seal] = ids.forInstruction('brave-otter', 17).split('.');
    assert.equal(ids.read([kind, machine, '18', seal].join('.')), undefined);
    assert.equal(ids.read([kind, Buffer.from('calm-heron').toString('base64url'), '17', seal].join('.')), undefined);
    assert.equal(new TaskIds('another token').read(ids.forInstruction('brave-otter', 17)), undefined);
    for (const bad of ['', 'i', 'i..1.x', 'i.YQ.-1.x', 'i.YQ.1.x.y', 'x.YQ.1.abc']) assert.equal(ids.read(bad), undefined, bad);
  });

  it('give work that is no instruction a fresh random id, each time another', () => {
    const [a, b] = [ids.fresh(), ids.fresh()];
    assert.notEqual(a, b);
    assert.deepEqual(ids.read(a), { kind: 'in-memory' });
  });
});
