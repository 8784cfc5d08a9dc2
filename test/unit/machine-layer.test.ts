import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { MachineManager, type MachineManagerOptions, type ManagerEvent } from '../../src/machines/machine-manager.ts';
import type { ExecResult } from '../../src/shared/types.ts';
import { fakeEngines, type FakeEngine, type Faults } from '../helpers/fake-engine.ts';
import { tempDataDir, valueOf } from '../helpers/machines.ts';

const GRACE_MS = 1000;
const SAVE_DELAY_MS = 500;

/**
 * The machine layer on its own: queueing, timeouts, interrupts, the grace-period stop, crashes,
 * saves, checkpoints, rollback, pruning and a full disk, over the fake engine and `node:test`'s
 * mock timers, so that each takes milliseconds. The integration suites prove the same through
 * real interpreters.
 */
describe('the machine layer, over a fake engine', () => {
  let manager: MachineManager;
  let made: FakeEngine[];
  let faults: Faults;
  let dataDir: string;
  let cleanup: () => Promise<void>;

  async function open(options: Partial<MachineManagerOptions> = {}): Promise<string> {
    const fake = fakeEngines();
    ({ made, faults } = fake);
    const data = await tempDataDir({ empty: true });
    ({ dir: dataDir, cleanup } = data);
    manager = await MachineManager.open({ dataDir, engines: fake.engines, interruptGraceMs: GRACE_MS, saveDelayMs: SAVE_DELAY_MS, ...options });
    return (await manager.create()).name;
  }

  /** The next manager event that `matches`. */
  function event(matches: (event: ManagerEvent) => boolean): Promise<ManagerEvent> {
    return new Promise((resolve) => {
      const listener = (event: ManagerEvent) => {
        if (!matches(event)) return;
        manager.off('event', listener);
        resolve(event);
      };
      manager.on('event', listener);
    });
  }
  const state = (name: string, wanted: string) => event((e) => e.type === 'state' && e.name === name && e.state === wanted);

  async function value(name: string, code: string): Promise<string | null> {
    const { result } = await manager.run(name, code);
    if ('error' in result) throw new Error(result.error);
    return result.value;
  }

  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval'] }));
  afterEach(async () => {
    mock.timers.reset();
    await manager?.close();
    await cleanup?.();
  });

  it('runs instructions one at a time, in the order given, each with its own output', async () => {
    const name = await open();
    const busy = state(name, 'busy');
    const first = await manager.exec(name, 'print one\nsleep 1000\nprint two');
    const second = await manager.exec(name, 'x = 1\nprint three');
    const third = await manager.exec(name, 'x');
    assert.deepEqual([first.seq, second.seq, third.seq], [0, 1, 2]);
    await busy;
    mock.timers.tick(1000);
    const results = await Promise.all([first.done, second.done, third.done]);
    assert.deepEqual(made[0]!.ran, ['print one\nsleep 1000\nprint two', 'x = 1\nprint three', 'x']);
    assert.equal((results[2] as { value: string }).value, '1');
    const history = await manager.history(name);
    assert.deepEqual(
      history.map((entry) => [entry.seq, entry.stdout]),
      [
        [0, 'one\ntwo'],
        [1, 'three'],
        [2, undefined],
      ],
    );
  });

  it('gives what a cell displays to its sender as it comes, after the output before it, even a partial line', async () => {
    const name = await open();
    const seen: string[] = [];
    const { result } = await manager.run(name, 'print first\nwrite partial\nshow picture\nprint after', {
      onOutput: (chunk) => seen.push(`chunk ${chunk.data}`),
      onDisplay: (entry) => seen.push(`display ${'data' in entry ? String(entry.data['text/plain']) : 'clear'} after ${entry.afterOutput}`),
    });
    assert.ok(!('error' in result), 'the cell ran');
    assert.deepEqual(seen, ['chunk first', 'chunk partial', 'display picture after 2', 'chunk after']);
  });

  it('lets a follower of a running instruction stop following; the instruction runs on, and is followed again from its start', async () => {
    const name = await open();
    const busy = state(name, 'busy');
    const { seq, done } = await manager.exec(name, 'print one\nsleep 1000\nprint two');
    await busy;
    const stop = new AbortController();
    const seen: string[] = [];
    const following = manager.follow(name, seq, (chunk) => seen.push(chunk.data), stop.signal);
    stop.abort(new Error('the view looked away'));
    await assert.rejects(following, /the view looked away/);
    mock.timers.tick(1000);
    assert.ok(!('error' in (await done)), 'the instruction finished');
    assert.deepEqual(seen, ['one'], 'nothing after the stop');
    const again: string[] = [];
    await manager.follow(name, seq, (chunk) => again.push(chunk.data));
    assert.deepEqual(again, ['one', 'two']);
  });

  it('interrupts an instruction at its timeout, and says so', async () => {
    const name = await open();
    const busy = state(name, 'busy');
    const { done } = await manager.exec(name, 'sleep 60000', { timeoutSeconds: 2 });
    await busy;
    mock.timers.tick(1999);
    mock.timers.tick(1);
    const result = (await done) as { error: string };
    assert.match(result.error, /^Timed out after 2 s: the instruction was interrupted\.\nKeyboardInterrupt$/);
    assert.equal(await value(name, 'y = 3\ny'), '3', 'the machine runs on');
  });

  it('gives an instruction with a timeout of 0 all the time it takes', async () => {
    const name = await open({ defaultTimeoutSeconds: 2 });
    const busy = state(name, 'busy');
    const { done } = await manager.exec(name, 'sleep 86400000\nv = 1\nv', { timeoutSeconds: 0 });
    await busy;
    mock.timers.tick(86_400_000);
    assert.equal(valueOf(await done), '1');
  });

  it("does not count the time a person takes to answer input() against the instruction's timeout", async () => {
    // The machine measures the wait on the clock, which moves here only with the mock timers.
    mock.timers.reset();
    mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: Date.now() });
    const name = await open();
    const busy = state(name, 'busy');
    let answer!: (text: string) => void;
    let asked!: () => void;
    const question = new Promise<void>((resolve) => (asked = resolve));
    const { done } = await manager.exec(name, 'sleep 1000\nask who\nsleep 1500\nwho', {
      timeoutSeconds: 2,
      onInput: () => new Promise<string>((resolve) => ((answer = resolve), asked())),
    });
    let finished = false;
    void done.then(() => (finished = true));
    await busy;
    mock.timers.tick(1000);
    await question;
    mock.timers.tick(60_000);
    answer('Ada');
    await new Promise(setImmediate);
    mock.timers.tick(999);
    await new Promise(setImmediate);
    assert.equal(finished, false, '1 s of its 2 s were left when it asked');
    mock.timers.tick(1);
    assert.match(((await done) as { error: string }).error, /^Timed out after 2 s/);
  });

  it('an interrupt stops what runs and cancels what is queued', async () => {
    const name = await open();
    const busy = state(name, 'busy');
    const running = await manager.exec(name, 'sleep 60000');
    const queued = await manager.exec(name, 'x = 1');
    await busy;
    assert.deepEqual(manager.interrupt(name), { cancelled: 1, interrupted: true });
    assert.deepEqual(await running.done, { error: 'KeyboardInterrupt', runtime_ms: 0 });
    assert.match(((await queued.done) as { error: string }).error, /KeyboardInterrupt: it was cancelled by an interrupt before it started/);
    await assert.rejects(value(name, 'x'), /NameError/, 'the cancelled instruction never ran');
  });

  it('an instruction whose machine cannot start says why, and the next one starts it', async () => {
    const name = await open();
    faults.start = 'no interpreter here';
    const { result } = await manager.run(name, 'x = 1');
    assert.deepEqual(result, { error: 'Could not start the machine: no interpreter here', runtime_ms: 0 });
    delete faults.start;
    assert.equal(await value(name, 'x = 2\nx'), '2');
    assert.equal(manager.get(name).nextSeq, 2, 'both are in the history');
  });

  it('an interrupt while the machine is swapped in ends the instruction before its code starts', async () => {
    const name = await open();
    let release!: () => void;
    faults.startHeld = new Promise((resolve) => (release = resolve));
    const { done } = await manager.exec(name, 'x = 1');
    await Promise.resolve();
    assert.deepEqual(manager.interrupt(name), { cancelled: 0, interrupted: true });
    delete faults.startHeld;
    release();
    assert.deepEqual(await done, { error: 'KeyboardInterrupt: it was interrupted before it started', runtime_ms: 0 });
    assert.deepEqual(made[0]!.ran, [], 'the code never ran');
    assert.equal(manager.get(name).state, 'warm', 'the machine is in, and ready for the next');
  });

  it('stops code that ignores an interrupt after the grace period; the machine goes back to its snapshot', async () => {
    const name = await open();
    assert.equal(await value(name, 'x = 1\nx'), '1');
    await manager.save(name);
    const busy = state(name, 'busy');
    const { done } = await manager.exec(name, 'x = 2\nstubborn');
    await busy;
    manager.interrupt(name);
    mock.timers.tick(GRACE_MS);
    const result = (await done) as { error: string };
    assert.match(
      result.error,
      /^Interrupted: the code did not stop within 1 s of the interrupt, so its Python process was stopped\. The machine goes back to its snapshot of [^ ]+\.$/,
    );
    assert.equal(await value(name, 'x'), '1');
    assert.equal(made.length, 2, 'a new process');
  });

  it('a process killed while idle comes back at the next instruction, which says what was lost', async () => {
    const name = await open();
    await value(name, 'x = 1');
    await manager.save(name);
    await value(name, 'x = 2');
    const swapped = state(name, 'swapped');
    made[0]!.kill();
    await swapped;
    const { result } = await manager.run(name, 'x');
    assert.equal((result as { value: string }).value, '1');
    assert.deepEqual(result.data?.notices, [
      `The Python process was killed by SIGKILL while idle. The machine goes back to its snapshot of ${manager.get(name).snapshot!.at}. Effects of instructions 1–1 are lost.`,
    ]);
  });

  it('a crash during an instruction is its result; the next one starts again from the snapshot', async () => {
    const name = await open();
    await value(name, 'x = 1');
    await manager.save(name);
    const { result } = await manager.run(name, 'x = 5\ncrash');
    assert.match(
      (result as { error: string }).error,
      /^The Python process exited with code 1 while running this instruction\. The machine goes back to its snapshot/,
    );
    assert.equal(await value(name, 'x'), '1');
  });

  it('saves a changed state after a quiet time, and keeps the save as an automatic checkpoint', async () => {
    const name = await open();
    await value(name, 'x = 7');
    const saved = event((e) => e.type === 'checkpoint' && e.name === name);
    mock.timers.tick(SAVE_DELAY_MS);
    await saved;
    // In turn after the save, which keeps its automatic checkpoint before it ends.
    await manager.save(name);
    assert.equal(await readFile(join(dataDir, 'machines', name, 'snapshot'), 'utf8'), '{"x":7}');
    const [auto] = await manager.checkpoints(name);
    assert.equal(auto?.auto, true);
    assert.equal(auto?.seq, 1);
  });

  it('saves the state of a machine that is never quiet, between two instructions, within the time set', async () => {
    const name = await open({ saveWithinMs: 2000 });
    const saved = event((e) => e.type === 'checkpoint' && e.name === name);
    let seen = false;
    void saved.then(() => (seen = true));
    // An instruction every 400 ms: never the 500 ms of quiet the other save waits for.
    for (let i = 0; i < 4; i++) {
      await value(name, `x = ${i}`);
      mock.timers.tick(400);
    }
    assert.equal(seen, false, 'not before the time set');
    for (let i = 4; i < 8 && !seen; i++) {
      await value(name, `x = ${i}`);
      mock.timers.tick(400);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await saved;
    assert.match(await readFile(join(dataDir, 'machines', name, 'snapshot'), 'utf8'), /^\{"x":[4-7]\}$/);
  });

  it('keeps the newest automatic checkpoints, as many as set, and every named one', async () => {
    const name = await open({ autoCheckpoints: 2 });
    await value(name, 'x = 0');
    await manager.checkpoint(name, { label: 'mine' });
    for (let i = 1; i <= 4; i++) {
      await value(name, `x = ${i}`);
      await manager.save(name);
    }
    const kept = await manager.checkpoints(name);
    assert.deepEqual(
      kept.map((c) => [c.label, c.auto, c.seq]),
      [
        ['mine', false, 1],
        [null, true, 4],
        [null, true, 5],
      ],
    );
  });

  it('rolls back to a checkpoint, which the history records as an instruction of its own', async () => {
    const name = await open();
    await value(name, 'x = 1');
    const one = await manager.checkpoint(name, { label: 'one' });
    await value(name, 'x = 2');
    const { seq } = await manager.rollback(name, 'one');
    assert.equal(await value(name, 'x'), '1');
    const entry = (await manager.history(name)).find((e) => e.seq === seq);
    assert.equal(entry?.code, `# perennial: rollback to checkpoint ${one.id} ("one")`);
    // The state it left was kept: the rollback can be undone.
    const left = (await manager.checkpoints(name)).filter((c) => c.auto).at(-1)!;
    await manager.rollback(name, left.id);
    assert.equal(await value(name, 'x'), '2');
  });

  it("moves a machine into a person's folder: saved and swapped out first, back there with its state; tags set and removed; a fork takes a folder of its own choosing; a full disk refuses the move", async () => {
    const name = await open();
    const folder = await mkdtemp(join(dataDir, 'notebooks-'));
    const other = await mkdtemp(join(dataDir, 'copies-'));
    await value(name, 'x = 1');
    await manager.update(name, { tags: { notebook: 'a.ipynb', drop: 'me' } });
    assert.equal(manager.get(name).state, 'warm', 'a change of tags alone leaves the machine running');
    const moved = await manager.update(name, { workdir: folder, tags: { drop: null } });
    assert.deepEqual([moved.workdir, moved.tags, moved.state, moved.swappedOut?.reason], [folder, { notebook: 'a.ipynb' }, 'swapped', `it moved to ${folder}`]);
    assert.equal(await value(name, 'x'), '1');
    assert.equal(made.at(-1)!.options.folder, folder, 'the next engine works in the folder');
    const manifest = JSON.parse(await readFile(join(dataDir, 'machines', name, 'machine.json'), 'utf8')) as { workdir?: string };
    assert.equal(manifest.workdir, folder);

    await manager.checkpoint(name, { label: 'there' });
    const { notes } = await manager.rollback(name, 'there');
    assert.deepEqual(notes, [`The files of ${folder}, where it works, are yours and stay as they are now: a rollback returns the machine's own state.`]);

    assert.equal((await manager.fork(name)).workdir, folder, 'a fork works where its origin does, unless told otherwise');
    assert.equal((await manager.fork(name, { workdir: other })).workdir, other);
    await assert.rejects(manager.update(name, { workdir: 'relative/path' }), /The working folder must be an absolute path/);
    await assert.rejects(manager.update(name, { workdir: join(folder, 'missing') }), /The working folder .* does not exist/);
    await assert.rejects(manager.update(name, { tags: { 'bad key': 'x' } }), /bad tag key/);

    faults.snapshot = 'ENOSPC';
    await value(name, 'x = 2');
    await assert.rejects(manager.update(name, { workdir: null }), /ENOSPC/);
    assert.deepEqual([manager.get(name).workdir, manager.get(name).state], [folder, 'warm'], 'nothing changed');
    delete faults.snapshot;
    assert.equal((await manager.update(name, { workdir: null })).workdir, undefined);
    assert.equal(await value(name, 'x'), '2');
    assert.equal(made.at(-1)!.options.folder, undefined, 'back in a folder of its own');

    // A folder removed behind its back: the machine runs in its own, and says so once.
    await manager.update(name, { workdir: other });
    await rm(other, { recursive: true });
    const { result } = await manager.run(name, 'x');
    assert.deepEqual(result.data?.notices, [`${other}, where this machine works, is gone: it works in a folder of its own until given another.`]);
    assert.equal(made.at(-1)!.options.folder, undefined);
  });

  it('on a full disk, refuses a swap and a checkpoint, says why, and loses nothing', async () => {
    const name = await open();
    await value(name, 'x = 1');
    faults.snapshot = 'ENOSPC';
    await assert.rejects(manager.swap(name), /ENOSPC/);
    assert.equal(manager.get(name).state, 'warm');
    assert.match(manager.get(name).warnings.join(' '), /It cannot be swapped out, so it stays in memory: ENOSPC/);
    await assert.rejects(manager.checkpoint(name, { label: 'full' }), /Could not take a checkpoint of machine .*: ENOSPC.*Nothing was changed/);
    await assert.rejects(manager.rollback(name, 'nothing'), /has no checkpoint "nothing"/);
    delete faults.snapshot;
    assert.equal(await value(name, 'x'), '1');
    await manager.swap(name);
    assert.deepEqual(manager.get(name).warnings, []);
    assert.equal(await value(name, 'x'), '1', 'swapped in again from the snapshot');
  });

  it('swaps out a machine left idle', async () => {
    const name = await open({ idleSeconds: 30 });
    await value(name, 'x = 1');
    const swapped = state(name, 'swapped');
    mock.timers.tick(30_000);
    await swapped;
    assert.equal(await value(name, 'x'), '1');
  });

  it('keeps no more machines warm than it may: the least recently used idle one goes', async () => {
    const first = await open({ maxWarm: 2 });
    const second = (await manager.create()).name;
    const third = (await manager.create()).name;
    await value(first, 'x = 1');
    await value(second, 'x = 2');
    const swapped = state(first, 'swapped');
    await value(third, 'x = 3');
    await swapped;
    assert.deepEqual(
      [first, second, third].map((name) => manager.get(name).state),
      ['swapped', 'warm', 'warm'],
    );
    assert.equal(manager.get(first).swappedOut?.reason, 'more than 2 machines were warm (--max-warm)');
    assert.equal(await value(first, 'x'), '1', 'swapped in again, as it was');
  });

  it('keeps machines warm by memory, not by count: with memory to spare all stay; short of it, the least recently used idle one goes, and says why', async () => {
    let free = 8 * 2 ** 30;
    const first = await open({ memory: { reserveBytes: 1 << 30, freeBytes: () => free } });
    const names = [first, ...(await Promise.all(Array.from({ length: 11 }, async () => (await manager.create()).name)))];
    for (const [i, name] of names.entries()) await value(name, `x = ${i}`);
    assert.ok(
      names.every((name) => manager.get(name).state === 'warm'),
      'twelve warm: no count limits them',
    );
    free = 512 << 20;
    const swapped = state(first, 'swapped');
    await manager.swap(names[11]!);
    await value(names[11]!, 'x');
    await swapped;
    assert.deepEqual(manager.get(first).swappedOut?.reason, 'the system had 512 MiB of memory available, less than the 1024 MiB kept free');
    assert.equal(names.filter((name) => manager.get(name).state === 'swapped').length, 1, 'one goes at each machine that comes in');
    assert.match(manager.warmRule(), /machines stay warm while more than 1024 MiB of memory stays available \(now 512 MiB\)$/);
    assert.equal(await value(first, 'x'), '0', 'swapped in again, as it was');
    assert.equal(manager.get(first).swappedOut, undefined, 'warm again: no reason to give');
  });

  it('an unreadable snapshot is set aside, and the machine starts empty and says so', async () => {
    const name = await open();
    await value(name, 'x = 1');
    await manager.swap(name);
    faults.restore = 'the snapshot is damaged';
    const { result } = await manager.run(name, 'y = 2');
    delete faults.restore;
    const lost = (result as ExecResult).data?.lost ?? [];
    assert.match(lost[0]?.reason ?? '', /^the snapshot could not be restored \(the snapshot is damaged\); it was kept as /);
    await assert.rejects(value(name, 'x'), /NameError/);
  });
});
