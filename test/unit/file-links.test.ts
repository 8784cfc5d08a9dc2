import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { linkOrCopy, symlinkIfAllowed } from '../../src/platform/file-links.ts';

/** Another file system than the temporary folder's, where this machine has one (a tmpfs). */
const OTHER_FILE_SYSTEM = '/dev/shm';

describe('links where the file system or the system has none', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'perennial-links-'));
    await writeFile(join(dir, 'snapshot'), 'the bytes of a snapshot');
  });
  after(async () => rm(dir, { recursive: true, force: true }));

  it('a second name is a hard link on one file system', async () => {
    await linkOrCopy(join(dir, 'snapshot'), join(dir, 'linked'));
    assert.equal((await stat(join(dir, 'snapshot'))).ino, (await stat(join(dir, 'linked'))).ino);
  });

  it(
    'a copy where there can be no hard link (here: to another file system)',
    { skip: !existsSync(OTHER_FILE_SYSTEM) && `no ${OTHER_FILE_SYSTEM}` },
    async () => {
      const elsewhere = await mkdtemp(join(OTHER_FILE_SYSTEM, 'perennial-links-'));
      try {
        await linkOrCopy(join(dir, 'snapshot'), join(elsewhere, 'copied'));
        assert.equal(await readFile(join(elsewhere, 'copied'), 'utf8'), 'the bytes of a snapshot');
        assert.notEqual((await stat(join(dir, 'snapshot'))).dev, (await stat(join(elsewhere, 'copied'))).dev);
      } finally {
        await rm(elsewhere, { recursive: true, force: true });
      }
    },
  );

  it('a symbolic link is made where allowed, and where refused the answer says why; other failures are thrown', async () => {
    assert.equal(await symlinkIfAllowed('snapshot', join(dir, 'symlink')), undefined);
    assert.equal((await lstat(join(dir, 'symlink'))).isSymbolicLink(), true);
    assert.equal(await readlink(join(dir, 'symlink')), 'snapshot');
    // sysfs refuses new entries with EPERM, as Windows refuses a symbolic link to a user without the privilege.
    assert.match((await symlinkIfAllowed('snapshot', '/sys/perennial-link')) ?? '', /makes no symbolic links here \(EPERM\)/);
    await assert.rejects(symlinkIfAllowed('snapshot', join(dir, 'no-such-folder', 'link')), { code: 'ENOENT' });
  });
});
