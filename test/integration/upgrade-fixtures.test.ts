import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MachineManager } from '../../src/machines/machine-manager.ts';
import { MachineStore } from '../../src/machines/machine-store.ts';
import { HttpClient } from '../../src/client/http-client.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import type { ForeverVMError } from '../../src/shared/forevervm-error.ts';
import { FIXTURE_FILE, type FixtureMachine, type FixtureRecord } from '../fixtures/data-dirs/fixture-record.ts';
import { ENGINES_UNDER_TEST, openManager, run, tempDataDir, valueOf } from '../helpers/machines.ts';
import { expectedOn, KINDS } from '../helpers/state-kinds.ts';

const FIXTURES = fileURLToPath(new URL('../fixtures/data-dirs/', import.meta.url));

/** Every fixture: a data dir written by an earlier build (scripts/make-fixture.sh data-dir). */
const fixtures = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(FIXTURES, entry.name, FIXTURE_FILE)))
  .map((entry) => ({ dir: join(FIXTURES, entry.name), record: JSON.parse(readFileSync(join(FIXTURES, entry.name, FIXTURE_FILE), 'utf8')) as FixtureRecord }));

/**
 * Each of the machine's state kinds gives what it gave in the build that wrote it; `as` the engine
 * whose expectations hold (a sandbox machine upgraded through pickling keeps what the python engine keeps).
 */
async function checkKinds(manager: MachineManager, machine: FixtureMachine, name = machine.name, as = machine.engine): Promise<void> {
  for (const kind of KINDS.filter((k) => machine.kinds.includes(k.kind))) {
    const { result } = await run(manager, name, kind.check);
    assert.equal(valueOf(result), expectedOn(kind, as), `${kind.kind} on ${machine.engine}`);
  }
}

/** The names the pickling path cannot carry (what the python engine loses) that the machine still had. */
const unpicklable = (machine: FixtureMachine) =>
  KINDS.filter((k) => machine.kinds.includes(k.kind)).flatMap((k) => (k.lost?.python ?? []).filter((name) => !k.lost?.[machine.engine]?.includes(name)));

const has = async (manager: MachineManager, name: string, variable: string) =>
  valueOf((await run(manager, name, `${JSON.stringify(variable)} in globals()`)).result);

/**
 * Today's build opens a copy of each data dir that an earlier build wrote: every variable comes
 * back as that build kept it, and the machine then runs, saves, swaps, takes checkpoints, forks
 * and rolls back, to the old build's checkpoints too.
 */
for (const { dir, record } of fixtures) {
  describe(`a data dir written by Perennial ${record.version} (${record.commit.slice(0, 7)})`, { timeout: 600_000 }, () => {
    let manager: MachineManager;
    let cleanup: () => Promise<void>;
    /** A fork of each machine made before anything ran: its state is the old build's, untouched. */
    const pristine = new Map<string, string>();

    before(async () => {
      const data = await tempDataDir();
      cleanup = data.cleanup;
      await cp(dir, data.dir, { recursive: true });
      manager = await openManager({ dataDir: data.dir });
      for (const machine of record.machines) pristine.set(machine.name, (await manager.fork(machine.name)).name);
    });
    after(async () => {
      await manager?.close();
      await cleanup?.();
    });

    if (record.deleted) {
      it('the name of the machine it deleted stays retired', () => {
        assert.equal(new MachineStore(manager.dataDir).isUsed(record.deleted!), true);
        assert.ok(!manager.list().some((m) => m.name === record.deleted));
      });
    }

    for (const machine of record.machines.filter((m) => ENGINES_UNDER_TEST.includes(m.engine))) {
      it(`${machine.engine} machine: its ${machine.kinds.length} kinds of state, with nothing lost and nothing to say`, async () => {
        const { result } = await run(manager, machine.name, 'None');
        assert.deepEqual(result.data ?? null, null, 'no losses, no notices');
        await checkKinds(manager, machine);
      });

      it(`${machine.engine} machine: runs, swaps, takes a checkpoint, forks`, async () => {
        valueOf((await run(manager, machine.name, 'fixture_new = "after the upgrade"')).result);
        await manager.swap(machine.name);
        assert.equal(valueOf((await run(manager, machine.name, 'fixture_new')).result), "'after the upgrade'");
        await manager.checkpoint(machine.name, { label: 'upgraded' });
        const fork = await manager.fork(machine.name);
        assert.equal(valueOf((await run(manager, fork.name, 'fixture_new, k_count')).result), "('after the upgrade', 5)");
        const cleared = await manager.kernel(fork.name, 'reset', {});
        assert.ok(cleared.cleared > machine.kinds.length, `reset cleared ${cleared.cleared} names`);
        assert.equal(await has(manager, fork.name, 'k_count'), 'False');
      });

      it(`${machine.engine} machine: completes and lists its variables with today's kernel commands`, async () => {
        const { matches } = await manager.complete(machine.name, { code: 'k_coun', cursor: 6 });
        assert.ok(matches.includes('k_count') && matches.some((m) => m.startsWith('k_counter(')), matches.join(', '));
        const variables = await manager.kernel(machine.name, 'variables', {});
        assert.ok(variables.some((v) => v.name === 'k_count' && v.type === 'int'));
      });

      if (machine.checkpoint) {
        it(`${machine.engine} machine: rolls back to the checkpoint the old build took, and forward again`, async () => {
          await manager.rollback(machine.name, 'fixture');
          assert.equal(await has(manager, machine.name, 'fixture_after_checkpoint'), 'False');
          await checkKinds(manager, machine);
          await manager.rollback(machine.name, 'upgraded');
          assert.equal(
            valueOf((await run(manager, machine.name, 'fixture_new, fixture_after_checkpoint')).result),
            "('after the upgrade', 'made after the checkpoint')",
          );
        });
      }

      if (machine.engine === 'sandbox') {
        it('sandbox machine: runs on the Pyodide that made it; one made on 0.29 is upgraded to 314 with its state, and rolls back to 0.29', async () => {
          const name = pristine.get(machine.name)!;
          if (manager.get(name).runtime?.pyodide === '314.0.7') {
            assert.equal(manager.get(name).upgradeTo, null);
            await assert.rejects(manager.upgrade(name), /cannot be upgraded: it runs Pyodide 314\.0\.7 \(Python 3\.14\.2\) already/);
            return checkKinds(manager, machine, name);
          }
          assert.deepEqual(manager.get(name).runtime, { pyodide: '0.29.0', python: '3.13.2' });
          assert.deepEqual(manager.get(name).upgradeTo, { pyodide: '314.0.7', python: '3.14.2' });
          assert.equal(valueOf((await run(manager, name, 'import sys; sys.version[:4]')).result), "'3.13'");
          const upgraded = await manager.upgrade(name);
          assert.deepEqual(upgraded.from, { pyodide: '0.29.0', python: '3.13.2' });
          assert.deepEqual(upgraded.to, { pyodide: '314.0.7', python: '3.14.2' });
          assert.deepEqual(upgraded.lost.map((item) => item.name).sort(), unpicklable(machine).sort(), JSON.stringify(upgraded.lost));
          assert.deepEqual(manager.get(name).runtime, upgraded.to);
          assert.equal(manager.get(name).upgradeTo, null);
          const recorded = (await manager.history(name)).at(-1)!;
          assert.equal(recorded.seq, upgraded.seq);
          assert.match(JSON.stringify(recorded.result), /Upgraded from Pyodide 0\.29\.0 \(Python 3\.13\.2\) to Pyodide 314\.0\.7/);
          await manager.swap(name);
          assert.equal(valueOf((await run(manager, name, 'import sys; sys.version[:4]')).result), "'3.14'");
          await checkKinds(manager, machine, name, 'python');
          await assert.rejects(manager.upgrade(name), /cannot be upgraded: it runs Pyodide 314\.0\.7 \(Python 3\.14\.2\) already/);
          await manager.rollback(name, upgraded.checkpoint.id);
          assert.equal(valueOf((await run(manager, name, 'import sys; sys.version[:4], k_count')).result), "('3.13', 5)");
          assert.deepEqual(manager.get(name).runtime, upgraded.from);
        });
      } else {
        it('python machine: there is nothing to upgrade, and it says why', async () => {
          await assert.rejects(
            manager.upgrade(pristine.get(machine.name)!),
            /cannot be upgraded: its python engine runs the interpreter it was given \(Python 3\.\d+\.\d+\)/,
          );
        });
      }

      if (machine.fork) {
        it(`${machine.engine} machine: the fork the old build made has its own state`, async () => {
          assert.equal(valueOf((await run(manager, machine.fork!, 'fixture_in_fork, k_count')).result), "('only in the fork', 5)");
          assert.equal(await has(manager, machine.name, 'fixture_in_fork'), 'False');
        });
      }
    }
  });
}

/** A team an earlier build made: today's build knows its people by their keys, and whose each machine is. */
for (const { dir, record } of fixtures.filter((fixture) => fixture.record.team)) {
  const team = record.team!;
  describe(`the team of a data dir written by Perennial ${record.version} (${record.commit.slice(0, 7)})`, { timeout: 300_000 }, () => {
    let server: LocalServer;
    let cleanup: () => Promise<void>;
    const clients: HttpClient[] = [];
    const client = (token: string) => {
      const made = new HttpClient({ baseUrl: server.url, token });
      clients.push(made);
      return made;
    };

    before(async () => {
      const data = await tempDataDir({ empty: true });
      cleanup = data.cleanup;
      await cp(dir, data.dir, { recursive: true });
      server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'sandbox' });
    });
    after(async () => {
      for (const made of clients) await made.close();
      await server?.close();
      await cleanup?.();
    });

    it('takes the keys that build made, and keeps each machine its owner’s and each share', async () => {
      const owner = client(team.ownerKey);
      const person = client(team.personKey);
      assert.equal((await person.whoami()).account, team.person);
      assert.deepEqual((await owner.list()).map((m) => m.name).sort(), record.machines.flatMap((m) => [m.name, ...(m.fork ? [m.fork] : [])]).sort());
      assert.deepEqual(
        (await person.list()).map((m) => [m.name, m.access?.owner, m.access?.right]),
        [[team.shared, team.owner, 'read']],
      );
      assert.ok(Array.isArray(await person.history(team.shared)));
      const other = record.machines.find((m) => m.name !== team.shared)!.name;
      await assert.rejects(person.get(other), (error: ForeverVMError) => error.status === 404);
      const entries = await owner.team('audit', {});
      assert.ok(
        entries.some((entry) => entry.action === 'team made' && entry.who === 'the operator'),
        'the old build’s entries are read',
      );
      assert.ok(
        entries.some((entry) => entry.action === 'read' && entry.who === team.person),
        'and today’s appended after them',
      );
    });
  });
}
