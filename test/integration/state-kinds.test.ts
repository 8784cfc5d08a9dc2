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
