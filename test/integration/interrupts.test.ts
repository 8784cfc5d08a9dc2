import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { MachineManager } from '../../src/machines/machine-manager.ts';
import { ENGINES_UNDER_TEST, errorOf, eventually, machineOptions, managerFixture, run, valueOf } from '../helpers/machines.ts';

for (const engine of ENGINES_UNDER_TEST) {
  describe(`timeouts, interrupts and crashes on the ${engine} engine`, { timeout: 120_000 }, () => {
    const fixture = managerFixture();
    let manager: MachineManager;
    let name: string;

    before(() => {
      manager = fixture.manager;
    });

    /** A machine holding `kept = 'state'`, checkpointed to disk. */
    async function machineWithState(): Promise<string> {
      const machine = (await manager.create(machineOptions(engine))).name;
      await run(manager, machine, 'kept = "state"');
      await eventually(() => manager.get(machine).snapshot !== null, 10_000, 'a checkpoint');
      return machine;
    }

    before(async () => {
      name = await machineWithState();
    });

    // How soon a timeout or an interrupt takes effect is measured by `npm run bench` (interrupt latency).
    it('times out a busy loop with "Timed out"; the state stays usable', async () => {
      const r = await run(manager, name, 'n = 0\nwhile True:\n    n += 1', { timeoutSeconds: 1 });
      const error = errorOf(r.result);
      assert.match(error, /^Timed out after 1 s/);
      assert.match(error, /KeyboardInterrupt/);
      assert.doesNotMatch(error, /did not stop/, 'stopped by the interrupt, not the hard stop');
      assert.equal(valueOf((await run(manager, name, 'kept, n > 0')).result), "('state', True)");
    });

    it('times out a sleep', async () => {
      const error = errorOf((await run(manager, name, 'import time\ntime.sleep(30)', { timeoutSeconds: 1 })).result);
      assert.match(error, /^Timed out after 1 s/);
      assert.doesNotMatch(error, /did not stop/, 'stopped by the interrupt, not the hard stop');
    });

    it('interrupts a running instruction on request; the namespace is intact', async () => {
      const { seq, done } = await manager.exec(name, 'import time\nfor i in range(300):\n    print(i)\n    time.sleep(0.1)');
      await new Promise<void>((looping) => void manager.follow(name, seq, (c) => c.data === '1' && looping()));
      assert.deepEqual(manager.interrupt(name), { cancelled: 0, interrupted: true });
      const error = errorOf(await done);
      assert.match(error, /KeyboardInterrupt$/);
      assert.doesNotMatch(error, /Timed out/);
      assert.doesNotMatch(error, /perennial_kernel/, 'no kernel frames, not even the interrupt handler');
      const [entry] = await manager.history(name, 1);
      assert.equal(entry!.seq, seq, 'the interrupted instruction is in the history under its seq');
      assert.match(errorOf(entry!.result!), /KeyboardInterrupt$/);
      assert.equal(valueOf((await run(manager, name, 'kept, i < 299')).result), "('state', True)");
    });

    it('stops code whose interrupt lands in a garbage-collector callback, and prints nothing of it', async () => {
      // The callback is slow, so the interrupt nearly always lands in it, where Python cannot raise.
      const code = `import gc, time, weakref
class Cyclic:
    pass
def slow_callback(ref):
    started = time.perf_counter()
    while time.perf_counter() - started < 0.2:
        pass
refs = []
print("collecting")
while True:
    garbage = Cyclic()
    garbage.me = garbage
    refs.append(weakref.ref(garbage, slow_callback))
    del garbage
    gc.collect()`;
      const { seq, done } = await manager.exec(name, code);
      const chunks: string[] = [];
      await new Promise<void>(
        (collecting) =>
          void manager.follow(name, seq, (c) => {
            chunks.push(c.data);
            if (c.data === 'collecting') collecting();
          }),
      );
      manager.interrupt(name);
      const error = errorOf(await done);
      assert.match(error, /KeyboardInterrupt$/);
      assert.doesNotMatch(error, /did not stop/, 'stopped by the interrupt, not the hard stop');
      assert.doesNotMatch(error, /perennial_kernel/);
      assert.deepEqual(
        chunks.filter((c) => /Exception ignored|perennial_kernel/.test(c)),
        [],
        'nothing of the swallowed interrupt on stderr',
      );
      assert.equal(valueOf((await run(manager, name, 'kept')).result), "'state'");
    });

    it('exec with interrupt stops what runs and cancels what waits', async () => {
      const long = await manager.exec(name, 'import time\ntime.sleep(30)');
      const queued = await manager.exec(name, 'never = True');
      await eventually(() => manager.get(name).state === 'busy', 5000, 'busy');
      const urgent = await manager.exec(name, '"urgent"', { interrupt: true });
      assert.equal(urgent.interrupted, true);
      assert.match(errorOf(await long.done), /KeyboardInterrupt/);
      assert.match(errorOf(await queued.done), /cancelled by an interrupt before it started/);
      assert.equal(valueOf(await urgent.done), "'urgent'");
      assert.match(errorOf((await run(manager, name, 'never')).result), /NameError/);
      assert.deepEqual([long.seq + 1, long.seq + 2], [queued.seq, urgent.seq], 'seqs follow submission order');
    });

    it('runs instructions one at a time, in order', async () => {
      // Sent at once, without waiting for each to be queued: they run in the order sent.
      const submitted = await Promise.all(Array.from({ length: 10 }, (_, i) => manager.exec(name, `order = globals().get("order", []) + [${i}]\nlen(order)`)));
      const values = await Promise.all(submitted.map((s) => s.done));
      assert.deepEqual(
        values.map(valueOf),
        submitted.map((_, i) => String(i + 1)),
      );
      assert.equal(valueOf((await run(manager, name, 'order')).result), '[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]');
    });

    it('hard-stops code that ignores interrupts and restores the last snapshot', async () => {
      const machine = await machineWithState();
      await run(manager, machine, 'after_snapshot = 1');
      const r = await run(manager, machine, 'import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)', { timeoutSeconds: 1 });
      const error = errorOf(r.result);
      assert.match(error, /^Timed out after 1 s: the code did not stop within 1 s of the interrupt, so its Python process was stopped/);
      assert.match(error, /goes back to its snapshot of/);
      assert.equal(manager.get(machine).state, 'swapped');
      assert.equal(valueOf((await run(manager, machine, 'kept')).result), "'state'");
      assert.match(errorOf((await run(manager, machine, 'after_snapshot')).result), /NameError/);
      await manager.delete(machine);
    });

    it('survives the interpreter dying mid-instruction', async () => {
      const machine = await machineWithState();
      const error = errorOf((await run(manager, machine, 'import os\nos._exit(7)')).result);
      assert.match(error, /The Python process exited with code 7 while running this instruction/);
      assert.equal(valueOf((await run(manager, machine, 'kept')).result), "'state'");
      await manager.delete(machine);
    });

    it('notices a process killed while idle and comes back on the next instruction', async () => {
      const machine = await machineWithState();
      await run(manager, machine, 'more = 1');
      await eventually(() => manager.get(machine).snapshot?.seq === 2, 10_000, 'checkpoint');
      const pid = manager.processId(machine)!;
      process.kill(pid, 'SIGKILL');
      await eventually(() => manager.get(machine).state === 'swapped', 5000, 'swapped after kill');
      const r = await run(manager, machine, 'kept');
      assert.equal(valueOf(r.result), "'state'");
      assert.match(r.result.data?.notices?.[0] ?? '', /was killed by SIGKILL while idle/);
      await manager.delete(machine);
    });

    describe('an interrupt that reaches the machine before the cell begins', () => {
      // What is tested is that the interrupt is not lost: a grace period longer than reading the
      // cell can take on a loaded machine, after which the hard stop would say it was.
      const patient = managerFixture({ interruptGraceMs: 15_000 });

      it('stops the cell once it begins', async () => {
        const { manager } = patient;
        const machine = (await manager.create(machineOptions(engine))).name;
        // A long cell takes the sandbox a while to read before it begins: the interrupt comes meanwhile.
        const code = `${'pass\n'.repeat(20_000)}import time\ntime.sleep(60)`;
        const { done } = await manager.exec(machine, code, { timeoutSeconds: 0 });
        await eventually(() => manager.get(machine).state === 'busy', 60_000, 'busy');
        manager.interrupt(machine);
        assert.match(errorOf(await done), /KeyboardInterrupt/);
        assert.equal(valueOf((await run(manager, machine, '"alive"')).result), "'alive'");
      });
    });
  });
}

describe("an instruction's timeout on a sandbox machine still loading", { timeout: 120_000, skip: !ENGINES_UNDER_TEST.includes('sandbox') }, () => {
  // An empty data dir: its first sandbox machine waits for the base image to be made.
  const fixture = managerFixture({}, { empty: true });

  it('counts from when the machine is loaded: the load (here, building the base image) is not the code', async () => {
    // On a fresh data dir, the first sandbox machine waits for the base image to be built (seconds).
    const name = (await fixture.manager.create(machineOptions('sandbox'))).name;
    assert.equal(valueOf((await run(fixture.manager, name, '1 + 1', { timeoutSeconds: 0.5 })).result), '2');
  });
});
