import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { clusterSettings, environmentSettings, flagSettings, readSettingsFile } from '../../src/cluster/cluster-settings.ts';

describe('cluster settings', () => {
  it('takes each setting from the flags, then the environment, then the file; none: no cluster', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'perennial-settings-'));
    try {
      const file = join(dir, 'settings.json');
      await writeFile(file, JSON.stringify({ version: 1, cluster: { database: 'postgres://file/db', store: 's3://file-bucket/p', leaseSeconds: 30 } }));
      const settings = clusterSettings(
        flagSettings({ store: 's3://flag-bucket/x' }),
        environmentSettings({ PERENNIAL_LEASE: '7', PERENNIAL_ADVERTISE_URL: 'http://node-1:8080/' }),
        await readSettingsFile(file),
      );
      assert.deepEqual(settings, {
        database: 'postgres://file/db',
        store: { url: 's3://flag-bucket/x', endpoint: undefined, region: undefined },
        leaseSeconds: 7,
        advertiseUrl: 'http://node-1:8080',
      });
      assert.equal(clusterSettings(flagSettings({}), environmentSettings({}), await readSettingsFile(join(dir, 'none.json'))), undefined);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('names what is wrong as the person wrote it', async () => {
    assert.throws(() => flagSettings({ leaseSeconds: 'soon' }), /in the command line are not valid: --lease: /);
    assert.throws(() => flagSettings({ leaseSeconds: '1' }), /--lease: a lease is at least 2 s/);
    assert.throws(
      () => environmentSettings({ PERENNIAL_STORE: 'bucket' }),
      /in the environment are not valid: PERENNIAL_STORE: an S3 URL, s3:\/\/bucket\/prefix/,
    );
    assert.throws(
      () => clusterSettings(flagSettings({ database: 'postgres://db/x' })),
      /needs both a PostgreSQL database .* and a bucket .*; only the database is given/,
    );
    const dir = await mkdtemp(join(tmpdir(), 'perennial-settings-'));
    try {
      await writeFile(join(dir, 'new.json'), JSON.stringify({ version: 2 }));
      await assert.rejects(readSettingsFile(join(dir, 'new.json')), /has format 2, and this Perennial reads format 1: update Perennial/);
      await writeFile(join(dir, 'bad.json'), '{');
      await assert.rejects(readSettingsFile(join(dir, 'bad.json')), /is not settings/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
