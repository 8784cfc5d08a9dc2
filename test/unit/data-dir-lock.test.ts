import assert from 'node:assert/strict';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DataDirLock, DataDirLockedError } from '../../src/platform/data-dir-lock.ts';

/**
 * A lock left by a process that died, whose pid the system has given to another (here: this test's
 * own, which runs), on a system that does not say when a process started (macOS, Windows: a lock
 * written there has no start time).
 */
describe('the data dir lock of an owner whose pid runs on, where start times are unknown', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'perennial-lock-'));
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  async function leftLock(fields: Record<string, unknown>, minutesSinceTouched: number): Promise<void> {
    const path = join(dataDir, 'owner.lock');
    await writeFile(path, JSON.stringify({ pid: process.pid, startTime: null, hostname: hostname(), acquiredAt: new Date().toISOString(), ...fields }));
    const touched = new Date(Date.now() - minutesSinceTouched * 60_000);
    await utimes(path, touched, touched);
  }

  it('is taken over once its owner has not touched it for ten minutes', async () => {
    await leftLock({ heartbeat: true }, 11);
    const lock = await DataDirLock.acquire(dataDir);
    assert.equal(lock.record.pid, process.pid);
    assert.equal(lock.record.heartbeat, true);
    await lock.release();
  });

  it('is respected while its owner touches it', async () => {
    await leftLock({ heartbeat: true }, 1);
    await assert.rejects(DataDirLock.acquire(dataDir), DataDirLockedError);
  });

  it('is respected, however old, when written by a build that does not touch its lock', async () => {
    await leftLock({}, 60);
    await assert.rejects(DataDirLock.acquire(dataDir), DataDirLockedError);
  });
});
