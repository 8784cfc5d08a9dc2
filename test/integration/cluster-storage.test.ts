import assert from 'node:assert/strict';
import { appendFile, chmod, mkdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ObjectStore, StoreUnavailableError } from '../../src/cluster/object-store.ts';
import { CHUNK_BYTES, objectKey, StoredFolders } from '../../src/cluster/stored-folders.ts';
import { startBucket, type Bucket } from '../helpers/cluster-services.ts';
import { tempDataDir } from '../helpers/machines.ts';

/** Where the test's objects are, as a machine's generation keeps its own. */
const HOME = 'machines/a/g1';

/** A machine's folder kept in a real S3-compatible bucket (s3rver), as a cluster keeps it. */
describe('folders in a bucket', { timeout: 120_000 }, () => {
  let bucket: Bucket;
  let store: ObjectStore;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    bucket = await startBucket();
    Object.assign(process.env, bucket.env);
    store = new ObjectStore({ url: bucket.url, endpoint: bucket.endpoint });
    ({ dir, cleanup } = await tempDataDir());
  });

  after(async () => {
    store.close();
    await bucket.stop();
    await cleanup();
  });

  it('commits a folder and makes it again elsewhere, sending only what changed', async () => {
    const root = join(dir, 'a');
    await mkdir(join(root, 'files', 'deep'), { recursive: true });
    await writeFile(join(root, 'machine.json'), '{"name":"a"}');
    await writeFile(join(root, 'files', 'deep', 'empty'), '');
    await writeFile(join(root, 'files', 'run.sh'), '#!/bin/sh\n');
    await chmod(join(root, 'files', 'run.sh'), 0o755);
    await symlink('deep/empty', join(root, 'files', 'link'));
    // Over two chunks, like a long history: appending to it sends its last chunk only.
    const big = Buffer.alloc(CHUNK_BYTES * 2 + 100, 'x');
    await writeFile(join(root, 'history.jsonl'), big);
    const folders = new StoredFolders(store);
    const first = await folders.commit(root, HOME);
    assert.equal(first.bytes, big.length + 12 + 10);
    assert.equal(first.uploadedBytes, CHUNK_BYTES + 100 + 12 + 10, 'two equal chunks are one object');

    await appendFile(join(root, 'history.jsonl'), 'more\n');
    const second = await folders.commit(root, HOME);
    assert.notEqual(second.tree, first.tree);
    assert.equal(second.uploadedBytes, 100 + 5, 'only the last chunk changed');
    assert.equal((await folders.commit(root, HOME)).uploadedBytes, 0);

    // Another node, with nothing of it: everything comes from the bucket.
    const elsewhere = join(dir, 'b');
    assert.deepEqual((await new StoredFolders(store).materialize(second.tree, HOME, elsewhere)).lost, []);
    assert.equal(await readFile(join(elsewhere, 'history.jsonl'), 'utf8'), big.toString() + 'more\n');
    assert.equal(await readFile(join(elsewhere, 'machine.json'), 'utf8'), '{"name":"a"}');
    assert.equal((await stat(join(elsewhere, 'files', 'run.sh'))).mode & 0o777, 0o755);
    assert.equal(await readlink(join(elsewhere, 'files', 'link')), 'deep/empty');
    assert.equal((await readFile(join(elsewhere, 'files', 'deep', 'empty'))).length, 0);

    // An older commit over a newer folder: the folder becomes exactly that commit.
    await writeFile(join(elsewhere, 'files', 'extra'), 'not in the commit');
    await new StoredFolders(store).materialize(first.tree, HOME, elsewhere);
    assert.equal((await readFile(join(elsewhere, 'history.jsonl'))).length, big.length);
    await assert.rejects(stat(join(elsewhere, 'files', 'extra')), /ENOENT/);

    // What only the first commit needed goes; what the second needs stays, and nothing else.
    const inHome = () =>
      new Set(
        bucket
          .keys()
          .filter((key) => key.startsWith(`cluster/${HOME}/`))
          .map((key) => key.split('/').at(-1)!),
      );
    await folders.remove(
      HOME,
      [...first.objects].filter((hash) => !second.objects.has(hash)),
    );
    assert.deepEqual(inHome(), second.objects);
    await folders.sweep('machines/a/');
    assert.equal(inHome().size, 0);
  });

  it('refuses a tree that names a path outside its folder, and one from a newer format', async () => {
    const folders = new StoredFolders(store);
    const put = async (tree: object) => {
      const body = Buffer.from(JSON.stringify(tree));
      const hash = (await import('node:crypto')).createHash('sha256').update(body).digest('hex');
      await store.put(objectKey(HOME, hash), body);
      return hash;
    };
    const escaping = await put({ format: 'perennial-folder', version: 1, entries: [{ path: '../outside', kind: 'dir', mode: 0o700 }] });
    await assert.rejects(
      folders.materialize(escaping, HOME, join(dir, 'c')),
      (e: Error) => e instanceof StoreUnavailableError && /outside itself/.test(e.message),
    );
    const newer = await put({ format: 'perennial-folder', version: 2, entries: [] });
    await assert.rejects(folders.materialize(newer, HOME, join(dir, 'c')), /written by a newer Perennial \(format 2; this one reads 1\)/);
    await assert.rejects(stat(join(dir, 'c')), /ENOENT/, 'nothing is made of a refused tree');
  });

  it('says plainly when the bucket is down, and changes nothing', async () => {
    const root = join(dir, 'd');
    await mkdir(root);
    await writeFile(join(root, 'state'), 'kept');
    await bucket.pause();
    try {
      await assert.rejects(
        new StoredFolders(store).commit(root, HOME),
        (e: Error) => e instanceof StoreUnavailableError && /could not (read|write) machines\/a\/g1\/objects\//.test(e.message),
      );
      assert.equal(await readFile(join(root, 'state'), 'utf8'), 'kept');
    } finally {
      await bucket.resume();
    }
  });
});
