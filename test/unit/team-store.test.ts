import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { emptyTeam } from '../../src/team/team-document.ts';
import { FileTeamStore, TEAM_FILE, TeamDocumentError } from '../../src/team/team-store.ts';

describe("a team's document in the data dir", () => {
  it('is absent on a server for one person, and written whole (0600) once there is a team', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perennial-team-'));
    try {
      const store = new FileTeamStore(dir);
      assert.equal(await store.read(), undefined);
      await store.change(() => ({ document: emptyTeam('test'), answer: undefined }));
      const again = new FileTeamStore(dir);
      assert.equal((await again.read())?.format, 1);
      if (process.platform !== 'win32') assert.equal((await stat(join(dir, TEAM_FILE))).mode & 0o777, 0o600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('writes nothing when a change throws, and applies changes one after another', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perennial-team-'));
    try {
      const store = new FileTeamStore(dir);
      await store.change(() => ({ document: emptyTeam('test'), answer: undefined }));
      const add = (name: string) =>
        store.change((document) => {
          document!.people.push({ name, admin: false, createdAt: 'now' });
          return { document: document!, answer: undefined };
        });
      await Promise.all([add('ann'), add('ben'), add('cat')]);
      await assert.rejects(
        store.change(() => {
          throw new Error('no');
        }),
        /no/,
      );
      const people = JSON.parse(await readFile(join(dir, TEAM_FILE), 'utf8')).people.map((p: { name: string }) => p.name);
      assert.deepEqual(people, ['ann', 'ben', 'cat']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses a later format or a damaged file, leaving it as it is', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perennial-team-'));
    try {
      for (const text of ['{"format": 2, "people": []}', 'not json', '{"format": 1, "people": "nobody"}']) {
        await writeFile(join(dir, TEAM_FILE), text);
        await assert.rejects(new FileTeamStore(dir).read(), (error: Error) => error instanceof TeamDocumentError && /team\.json/.test(error.message));
        assert.equal(await readFile(join(dir, TEAM_FILE), 'utf8'), text);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
