import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ForeverVMClient } from '../../src/client/forevervm-client.ts';
import { HttpClient } from '../../src/client/http-client.ts';
import { UnsupportedByBackendError } from '../../src/shared/perennial-client.ts';
import { ForeverVMError } from '../../src/shared/forevervm-error.ts';
import { connectToLocalServer, runningServer } from '../../src/client/local-server-connection.ts';
import { ReplConnection } from '../../src/client/repl-connection.ts';
import { DataDirLock } from '../../src/platform/data-dir-lock.ts';
import { writeServerInfo } from '../../src/platform/server-info.ts';
import { VERSION } from '../../src/shared/version.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import type { OutputChunk } from '../../src/shared/types.ts';
import { foreverVMOnlyProxy } from '../helpers/forevervm-only-proxy.ts';
import { TEST_PYTHON, eventually, tempDataDir } from '../helpers/machines.ts';

describe('a local server this client cannot reach', { timeout: 120_000 }, () => {
  it('says that the server runs and where it says it listens, and why it cannot be reached, not that it did not start', async () => {
    const data = await tempDataDir();
    // What a server that listens where this client cannot connect leaves: the data dir held by a
    // live process, and a server.json naming an address whose connections end at once.
    const lock = await DataDirLock.acquire(data.dir);
    const dropping = createNetServer((socket) => socket.destroy()).listen(0, '127.0.0.1');
    await once(dropping, 'listening');
    const url = `http://127.0.0.1:${(dropping.address() as AddressInfo).port}`;
    await writeServerInfo(data.dir, { pid: process.pid, url, token: 't', version: VERSION, startedAt: new Date().toISOString(), background: true });
    try {
      await assert.rejects(connectToLocalServer(data.dir), (error: Error) => {
        assert.match(
          error.message,
          new RegExp(
            `runs \\(pid ${process.pid}\\) and says it listens on ${url}, but this client cannot reach it: (socket hang up|other side closed|read ECONNRESET)`,
          ),
        );
        assert.ok(error.message.includes(join(data.dir, 'server.log')), 'the log named');
        return true;
      });
      // The servers the client started (each refused the held data dir) are gone before it is let go.
      await eventually(() => spawnSync('pgrep', ['-f', data.dir]).status === 1, 30_000, 'the servers the client started to exit');
    } finally {
      dropping.close();
      await lock.release();
      await data.cleanup();
    }
  });
});

describe('ForeverVM client and local server discovery', { timeout: 360_000 }, () => {
  let dataDir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ dir: dataDir, cleanup } = await tempDataDir());
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
  });
  after(async () => {
    const info = await runningServer(dataDir);
    if (info) {
      process.kill(info.pid, 'SIGTERM');
      await eventually(() => !existsSync(join(dataDir, 'server.json')), 20_000, 'the server to stop');
    }
    delete process.env.PERENNIAL_PYTHON;
    await cleanup();
  });

  it('starts one server for clients that connect at the same time, and finds it afterwards', async () => {
    const clients = await Promise.all([1, 2, 3].map(() => connectToLocalServer(dataDir)));
    assert.equal(new Set(clients.map((c) => c.baseUrl)).size, 1, 'one server for all');
    const info = (await runningServer(dataDir))!;
    assert.notEqual(info.pid, process.pid, 'a separate, detached process');
    assert.equal((await connectToLocalServer(dataDir)).baseUrl, info.url);
    assert.match((await clients[0]!.whoami()).account, /Perennial local server/);
  });

  it('starts a server whose machines made without an engine get the engine the client names', async () => {
    const { dir, cleanup: remove } = await tempDataDir();
    try {
      const client = await connectToLocalServer(dir, { engine: 'python' });
      const { name, engine } = await client.create();
      assert.equal(engine, 'python');
      assert.equal((await client.get(name)).engine, 'python');
      await client.close();
    } finally {
      const info = await runningServer(dir);
      if (info) process.kill(info.pid, 'SIGTERM');
      await eventually(() => !existsSync(join(dir, 'server.json')), 20_000, 'the server to stop');
      await remove();
    }
  });

  it('finds the server again after it stopped (as an idle server does), starting a new one', async () => {
    const client = await connectToLocalServer(dataDir);
    const { name } = await client.create({ engine: 'python' });
    await client.run(name, 'kept = "across servers"');
    const before = (await runningServer(dataDir))!;
    process.kill(before.pid, 'SIGTERM');
    await eventually(async () => !existsSync(join(dataDir, 'server.json')) || (await runningServer(dataDir))?.pid !== before.pid, 20_000, 'the server to stop');
    const { result } = await client.run(name, 'kept');
    assert.equal((result as { value: string }).value, "'across servers'");
    assert.deepEqual(
      await client.variables(name),
      [{ name: 'kept', type: 'str', repr: "'across servers'", size: 14 }],
      'HTTP requests find the new server too',
    );
    assert.notEqual((await runningServer(dataDir))!.pid, before.pid, 'a new server');
    await client.close();
  });

  it('runs code, streams its output and reports errors with their codes', async () => {
    const client = await connectToLocalServer(dataDir);
    const { name } = await client.create({ engine: 'python', tags: { by: 'client' } });
    assert.deepEqual(
      (await client.list({ by: 'client' })).map((m) => m.name),
      [name],
    );
    const chunks: OutputChunk[] = [];
    const { seq, result } = await client.run(name, 'for i in range(3):\n    print(i)\n"end"', { onOutput: (c) => chunks.push(c) });
    assert.deepEqual(
      chunks.map((c) => c.data),
      ['0', '1', '2'],
    );
    assert.equal('value' in result && result.value, "'end'");
    // The same instruction over the protocol's HTTP endpoints: streamed again from the start, and long-polled.
    const info = (await runningServer(dataDir))!;
    const wire = new ForeverVMClient({ baseUrl: info.url, token: info.token });
    const replayed: OutputChunk[] = [];
    assert.deepEqual(await wire.streamResult(name, seq, (c) => replayed.push(c)), result);
    assert.deepEqual(replayed, chunks);
    assert.deepEqual(await wire.result(name, seq), result);
    // Completion from the live namespace, over the server's route.
    await client.run(name, 'counter_total = 3');
    assert.deepEqual(await client.complete(name, 'x = counter_t + 1', 'x = counter_t'.length), { matches: ['counter_total'], start: 4 });
    await assert.rejects(
      client.complete(name, 'x', 9),
      (error: unknown) => error instanceof ForeverVMError && error.status === 400 && /cursor is past the end/.test(error.message),
    );
    for (const attempt of [() => client.run('nonexistent-machine', '1'), () => wire.exec('nonexistent-machine', '1')]) {
      await assert.rejects(attempt(), (error: unknown) => {
        assert.ok(error instanceof ForeverVMError);
        assert.equal(error.status, 404);
        assert.equal(error.code, 'MachineNotFound');
        return true;
      });
    }
    await assert.rejects(
      client.create({ memoryMb: 8 }),
      (error: unknown) => error instanceof ForeverVMError && error.status === 400 && /memoryMb|memory_mb/.test(error.message),
    );
    const wrongToken = new HttpClient({ baseUrl: client.baseUrl, token: 'wrong' });
    await assert.rejects(wrongToken.whoami(), (error: unknown) => error instanceof ForeverVMError && error.status === 401);
    await client.close();
  });

  it('the WebSocket REPL runs instructions in turn and reconnects after a server restart, state intact', async () => {
    const { dir, cleanup: remove } = await tempDataDir();
    let server = await LocalServer.start({ dataDir: dir, defaultEngine: 'python' });
    const port = Number(new URL(server.url).port);
    const client = new ForeverVMClient({ baseUrl: server.url, token: server.token });
    try {
      const name = await client.createMachine();
      const repl = await ReplConnection.open(client, name);
      const chunks: OutputChunk[] = [];
      const first = await repl.exec('x = 41\nprint("hi")\nx + 1', (c) => chunks.push(c));
      assert.deepEqual(first, { seq: 0, result: first.result });
      assert.equal('value' in first.result && first.result.value, '42');
      assert.deepEqual(
        chunks.map((c) => c.data),
        ['hi'],
      );
      const [bump, read] = await Promise.all([repl.exec('x += 1'), repl.exec('x')]);
      assert.deepEqual([bump.seq, read.seq], [1, 2]);
      assert.equal('value' in read.result && read.result.value, '42');

      await server.close();
      server = await LocalServer.start({ dataDir: dir, defaultEngine: 'python', port });
      const after = await repl.exec('x + 100');
      assert.equal('value' in after.result && after.result.value, '142');
      assert.equal(after.seq, 3);
      repl.close();
      await assert.rejects(repl.exec('1'), /closed/);
      await assert.rejects(
        ReplConnection.open(client, 'no-such-machine'),
        (error: unknown) => error instanceof ForeverVMError && error.code === 'MachineNotFound',
      );
    } finally {
      await server.close();
      await remove();
    }
  });

  it('works with a local server of an older Perennial, which lacks the newest extensions', async () => {
    const { dir, cleanup: remove } = await tempDataDir();
    const server = await LocalServer.start({ dataDir: dir, defaultEngine: 'python' });
    const older = await foreverVMOnlyProxy(server.url, (path) => path === '/v1/machines');
    const client = new HttpClient({ baseUrl: older.url, token: server.token });
    try {
      const { name } = await client.create({ tags: { by: 'older' } });
      const [listed] = await client.list({ by: 'older' });
      assert.deepEqual([listed!.name, listed!.engine], [name, 'python'], 'each machine with its details, asked one by one');
      await client.list({ by: 'older' });
      assert.deepEqual(older.refusals, ['/v1/machines'], 'the listing it lacks is asked for once');
      await client.run(name, 'x = 7');
      assert.deepEqual(
        (await client.variables(name)).map((v) => v.name),
        ['x'],
        "the server's own variables, not an emulation",
      );
      assert.equal((await client.history(name)).length, 1);
    } finally {
      await client.close();
      older.close();
      await server.close();
      await remove();
    }
  });

  describe("against a backend without Perennial's extensions (as hosted ForeverVM)", () => {
    let bare: Server;
    let url: string;
    const requests: string[] = [];
    before(async () => {
      bare = createServer((req, res) => {
        requests.push(`${req.method} ${req.url}`);
        res.setHeader('content-type', 'application/json');
        if (req.url === '/v1/whoami') res.end(JSON.stringify({ account: 'hosted' }));
        else {
          res.statusCode = 404;
          res.end(JSON.stringify({ code: 'NotFound', id: null }));
        }
      });
      await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(bare.address() as { port: number }).port}`;
    });
    after(() => bare.close());

    it('says plainly which extension the backend lacks', async () => {
      const client = new ForeverVMClient({ baseUrl: url, token: 't' });
      assert.deepEqual(await client.whoami(), { account: 'hosted' });
      await assert.rejects(client.variables('m'), (error: unknown) => {
        assert.ok(error instanceof UnsupportedByBackendError);
        assert.match(error.message, /This backend cannot list variables/);
        return true;
      });
      await assert.rejects(client.swap('m'), UnsupportedByBackendError);
      await assert.rejects(new HttpClient({ baseUrl: url, token: 't' }).installPackages('m', ['six']), /This backend cannot install packages/);
    });

    it('learns at the first extension it lacks that it has none, and asks for none again', async () => {
      const client = new HttpClient({ baseUrl: url, token: 't' });
      requests.length = 0;
      for (let round = 0; round < 3; round++) {
        await assert.rejects(client.swap('m'), /This backend cannot swap machines out/);
        await assert.rejects(client.checkpoints('m'), /This backend cannot keep checkpoints/);
        await assert.rejects(client.complete('m', 'pri'), /This backend cannot complete code/);
      }
      assert.deepEqual(requests, ['POST /v1/machine/m/swap', 'GET /v1/status']);
    });

    it('reports an unreachable backend clearly', async () => {
      const client = new ForeverVMClient({ baseUrl: 'http://127.0.0.1:1', token: 't' });
      await assert.rejects(client.whoami(), /Cannot reach http:\/\/127\.0\.0\.1:1/);
    });
  });
});
