import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { LostItem } from '../../src/shared/types.ts';
import { ENGINES_UNDER_TEST, machineOptions, managerFixture, run, valueOf } from '../helpers/machines.ts';
import { expectedOn, kindsFor } from '../helpers/state-kinds.ts';

for (const engine of ENGINES_UNDER_TEST) {
  const kinds = kindsFor(engine);
  describe(`${kinds.length} kinds of state through a swap on the ${engine} engine`, { timeout: 300_000 }, () => {
    const fixture = managerFixture();
    let name: string;
    let lost: LostItem[];

    before(async () => {
      const { manager } = fixture;
      name = (await manager.create(machineOptions(engine))).name;
      for (const kind of kinds) {
        for (const code of kind.setup) valueOf((await run(manager, name, code)).result);
      }
      await manager.swap(name);
      lost = (await run(manager, name, 'None')).result.data?.lost ?? [];
      // A second swap: what came back must save again.
      await manager.swap(name);
    });

    it('names exactly what it could not keep, each with a reason', async () => {
      const expected = kinds.flatMap((k) => k.lost?.[engine] ?? []).sort();
      const copied = kinds.flatMap((k) => k.copied?.[engine] ?? []);
      assert.deepEqual(lost.map((item) => item.name).sort(), [...expected, ...copied].sort());
      for (const item of lost) assert.match(item.reason, /\w{3,}/, `a reason for ${item.name}`);
      for (const name of copied) assert.match(lost.find((item) => item.name === name)?.reason ?? '', /comes back as a copy/, name);
      const left = await run(fixture.manager, name, `[n for n in ${JSON.stringify(expected)} if n in globals()]`);
      assert.equal(valueOf(left.result), '[]', 'what was lost is gone, not half there');
      const afterSecondSwap = (await run(fixture.manager, name, 'None')).result.data?.lost ?? [];
      assert.deepEqual(afterSecondSwap, [], 'a second swap loses nothing more');
    });

    for (const kind of kinds) {
      it(kind.kind, async () => {
        const { result } = await run(fixture.manager, name, kind.check);
        assert.equal(valueOf(result), expectedOn(kind, engine));
      });
    }
  });
}

describe("Perennial's own work shows no warning in the user's cells (python engine, numpy)", { timeout: 120_000 }, () => {
  const fixture = managerFixture();

  it('listing, inspecting, completing, saving and restoring arrays that warn when their flags are read', async () => {
    const { manager } = fixture;
    const name = (await manager.create(machineOptions('python'))).name;
    // numpy 1.17 to 1.x warns whoever reads `flags.writeable` of what broadcast_arrays made.
    const made = await run(manager, name, 'import numpy as np\nk_bx, k_by = np.broadcast_arrays(np.arange(3), np.arange(3)[:, None])');
    valueOf(made.result);
    await manager.kernel(name, 'variables', {});
    await manager.kernel(name, 'variable', { name: 'k_bx' });
    await manager.kernel(name, 'inspect', { expr: 'k_bx.flags' });
    await manager.complete(name, { code: 'k_bx.fl' });
    // The user's own reading of the flag warns, as numpy means it to: only Perennial's is hidden.
    const own = await run(manager, name, 'k_bx.flags.writeable');
    assert.match(own.stderr, /FutureWarning: future versions will not create a writeable array from broadcast_array/);
    // Saved while warm, as a second after each change: what the save warned of would show in the next cell.
    await manager.save(name);
    const next = await run(manager, name, '1');
    assert.equal(next.stderr, '', "nothing of Perennial's in the next cell's output");
    await manager.swap(name);
    const after = await run(manager, name, '(k_bx.tolist(), k_by.shape, k_bx.strides[0])');
    assert.equal(valueOf(after.result), '([[0, 1, 2], [0, 1, 2], [0, 1, 2]], (3, 3), 0)', 'still a broadcast view');
    assert.equal(after.stderr, '');
  });
});
