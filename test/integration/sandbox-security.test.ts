import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createSocket, type Socket as DatagramSocket } from 'node:dgram';
import { isBuiltin } from 'node:module';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { MachineManager } from '../../src/machines/machine-manager.ts';
import { errorOf, eventually, openManager, run, tempDataDir, valueOf } from '../helpers/machines.ts';

const ESCAPES = new URL('../fixtures/sandbox-escapes.py', import.meta.url);
/** A SQLite database holding the secret, made by the host's Python (the test's Node may have no node:sqlite). */
const CANARY_DB_SCRIPT =
  'import sqlite3, sys\nwith sqlite3.connect(sys.argv[1]) as db:\n    db.execute("create table canary(secret)")\n    db.execute("insert into canary values (?)", (sys.argv[2],))';

/**
 * Every escape the research found, tried from inside a sandbox machine, and judged by evidence on
 * the host: canary files (a text file, a SQLite database) that must not be read or written, canary
 * listeners (TCP, a Unix socket, UDP) that must see no connection or datagram, a canary
 * environment secret, and host processes that must survive. Both ways a sandbox runs are tried: with bubblewrap, and without it, as on
 * macOS and Windows, where the sandbox process's own fences are all there is.
 */
for (const bubblewrap of [true, false]) {
  describe(`sandbox lockdown ${bubblewrap ? 'with bubblewrap' : 'under the permission model alone'}`, { timeout: 180_000 }, () => {
    const fileSecret = `file-secret-${randomBytes(8).toString('hex')}`;
    const envSecret = `env-secret-${randomBytes(8).toString('hex')}`;
    const connections: string[] = [];
    let canaryDir: string;
    let listener: Server;
    let unixListener: Server;
    let udpListener: DatagramSocket;
    let victim: ChildProcess;
    let manager: MachineManager;
    let dataDir: string;
    let cleanup: () => Promise<void>;
    let name: string;
    let everything = '';

    before(async () => {
      canaryDir = await mkdtemp(join(tmpdir(), 'perennial-canary-'));
      await writeFile(join(canaryDir, 'secret.txt'), fileSecret);
      const made = spawnSync('python3', ['-c', CANARY_DB_SCRIPT, join(canaryDir, 'secret.db'), fileSecret], { encoding: 'utf8' });
      assert.equal(made.status, 0, made.stderr);
      const canary = (socket: Socket) => {
        connections.push('connection');
        socket.on('data', (data) => connections.push(data.toString().split('\r\n')[0]!));
        socket.on('error', () => {});
        socket.end('HTTP/1.0 200 OK\r\n\r\nok');
      };
      listener = createServer(canary);
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      unixListener = createServer(canary);
      await new Promise<void>((resolve) => unixListener.listen(join(canaryDir, 'canary.sock'), resolve));
      udpListener = createSocket('udp4', (message) => connections.push(`datagram ${message.toString()}`));
      await new Promise<void>((resolve) => udpListener.bind(0, '127.0.0.1', resolve));
      victim = spawn('sleep', ['600'], { stdio: 'ignore' });
      process.env.PERENNIAL_CANARY_SECRET = envSecret;
      if (!bubblewrap) process.env.PERENNIAL_SANDBOX_BUBBLEWRAP = 'off';
      ({ dir: dataDir, cleanup } = await tempDataDir());
      manager = await openManager({ dataDir, interruptGraceMs: 2000 });
      const info = await manager.create({ engine: 'sandbox' });
      name = info.name;
      if (bubblewrap) assert.deepEqual(info.warnings, []);
      else assert.match(info.warnings.join('\n'), /no network unless made with it.*no operating-system fence/);
      await run(manager, name, 'kept = "state before the attacks"');
      // Attacks that end in a hard stop bring the machine back to this snapshot.
      await manager.save(name);
      const code = (await readFile(ESCAPES, 'utf8'))
        .replace('@CANARY_DIR@', canaryDir)
        .replace('@CANARY_FILE@', join(canaryDir, 'secret.txt'))
        .replace('@CANARY_DB@', join(canaryDir, 'secret.db'))
        .replace('@PORT@', String((listener.address() as { port: number }).port))
        .replace('@UDP_PORT@', String(udpListener.address().port))
        .replace('@UNIX_SOCKET@', join(canaryDir, 'canary.sock'))
        .replace('@DATA_DIR@', dataDir)
        .replace('@HOST_PID@', String(victim.pid));
      const attack = await run(manager, name, code, { timeoutSeconds: 60 });
      everything = JSON.stringify(attack);
      assert.equal(valueOf(attack.result), "'done'", 'the escape script ran to its end');
    });

    after(async () => {
      delete process.env.PERENNIAL_CANARY_SECRET;
      delete process.env.PERENNIAL_SANDBOX_BUBBLEWRAP;
      victim.kill();
      listener.close();
      unixListener.close();
      udpListener.close();
      await manager.close();
      await cleanup();
      await rm(canaryDir, { recursive: true, force: true });
    });

    /** The attempt's line of the script's output (JSON-encoded, as `everything` holds it). */
    const outcome = (tried: string) => everything.split('\\n').find((line) => line.includes(`${tried}: `)) ?? '';

    it('reads no host file: the canary secret appears in no output', () => {
      assert.ok(everything.includes('python open(canary): raised'), 'the attempts ran');
      assert.ok(!everything.includes(fileSecret), 'the canary file was read');
    });

    it('does not see the data dir', () => {
      assert.doesNotMatch(everything, /owner\.lock/);
      assert.doesNotMatch(everything, /'machines'/);
    });

    it('writes no host file and starts no process (no file appears in the canary folder)', async () => {
      assert.deepEqual((await readdir(canaryDir)).sort(), ['canary.sock', 'secret.db', 'secret.txt']);
    });

    it('opens no database file through node:sqlite and calls no native code through node:ffi, on the lines that have them', () => {
      const sqlite = ['read canary db', 'write into canary dir', 'attach in canary dir', 'vacuum into canary dir'].map((what) => `js sqlite ${what}`);
      for (const tried of [...sqlite, 'js import sqlite write into canary dir']) {
        assert.match(outcome(tried), isBuiltin('node:sqlite') ? /raised .*node:sqlite is disabled in the sandbox/ : /raised /, tried);
      }
      assert.match(outcome('js ffi dlopen libc'), isBuiltin('node:ffi') ? /raised .*node:ffi is disabled in the sandbox/ : /raised /);
    });

    it("gets a clean environment: the host's variables are not there", () => {
      assert.ok(everything.includes('python environ: returned'), 'the attempt ran');
      assert.ok(!everything.includes(envSecret), 'the canary environment secret leaked');
      assert.doesNotMatch(everything, /PERENNIAL_HOME|FOREVERVM_TOKEN/);
    });

    it('names no host path in its environment, and says that it runs no processes', async () => {
      const environ = valueOf((await run(manager, name, 'import os\nsorted(os.environ.items())')).result)!;
      assert.ok(!environ.includes(process.cwd()), environ);
      assert.doesNotMatch(environ, /'_'/);
      const system = await run(manager, name, 'os.system("ls")');
      assert.match(
        errorOf(system.result),
        /OSError: \[Errno \d+\] The sandbox runs no processes, so os\.system\('ls'\) cannot run; a python-engine machine can/,
      );
    });

    it('starts no thread of its own, whose guards would be missing', () => {
      for (const tried of ['js worker_threads Worker', 'js import worker_threads Worker'])
        assert.match(outcome(tried), /raised .*threads are disabled in the sandbox/);
    });

    it('cannot signal host processes', () => {
      assert.equal(victim.exitCode, null);
      assert.equal(victim.signalCode, null);
    });

    it('reaches no network: the canary listeners saw nothing, and no name was looked up', () => {
      for (const tried of ['python socket connect', 'js fetch', 'js http.get', 'js dgram send', 'js import', 'pyodide.http.pyfetch']) {
        assert.ok(everything.includes(tried), `the attempt ${tried} ran`);
      }
      assert.deepEqual(connections, []);
      assert.match(outcome('js permission has net'), /returned False/);
      // What a look-up or a listening socket would do leaves nothing on the host to see: their refusal is the evidence.
      for (const tried of ['js dns.lookup', 'js dns.promises.resolve4', 'js net.createServer listen']) {
        assert.match(outcome(tried), /this machine has no network access/, tried);
      }
    });

    it('reaches the network when made with it, by every way: the same listener sees each request', async () => {
      const port = (listener.address() as { port: number }).port;
      const open = (await manager.create({ engine: 'sandbox', network: true })).name;
      const url = `http://127.0.0.1:${port}`;
      // Node's own clients, as a package in the machine would use them: http.get, then a bare socket.
      const throughNode = `(url, port) => new Promise((done, fail) => {
        process.getBuiltinModule('node:http').get(url, (response) => {
          response.resume();
          const socket = process.getBuiltinModule('node:net').connect(port, '127.0.0.1', () => socket.end('GET /net-socket HTTP/1.0'));
          socket.resume().on('error', fail).on('close', () => done(response.statusCode));
        }).on('error', fail);
      })`;
      const code = [
        'import js',
        'from pyodide.http import pyfetch',
        `seen = [(await pyfetch("${url}/net-pyfetch")).status, (await js.fetch("${url}/net-js-fetch")).status]`,
        `seen.append(await js.eval(${JSON.stringify(throughNode)})("${url}/net-http", ${port}))`,
        'seen, js.process.permission.has("net")',
      ].join('\n');
      const reached = await run(manager, open, code, { timeoutSeconds: 30 });
      // Where the permission model covers the network (Node 25 on), the machine is given exactly that.
      assert.equal(valueOf(reached.result), `([200, 200, 200], ${process.allowedNodeEnvironmentFlags.has('--allow-net') ? 'True' : 'False'})`);
      // The canary answers as the connection opens: a request's line may reach it after the answer reached the machine.
      for (const path of ['/net-pyfetch', '/net-js-fetch', '/net-http', '/net-socket'])
        await eventually(() => connections.some((line) => line.startsWith(`GET ${path} `)), 10_000, `the listener to see ${path}`);
    });

    it('survives killing its own parent, coming back from its snapshot', async () => {
      await manager.save(name);
      const killed = await run(manager, name, 'import js\njs.process.kill(js.process.ppid, 9)\n"survived"', { timeoutSeconds: 10 });
      if ('error' in killed.result) assert.match(killed.result.error, /Python process|Timed out|disabled in the sandbox/);
      assert.equal(valueOf((await run(manager, name, 'kept')).result), "'state before the attacks'");
      assert.equal(victim.exitCode, null);
    });

    const bombs: Array<[string, string, number, RegExp]> = [
      ['a memory bomb', 'hog = bytearray(4 * 1024**3 - 1)', 15, /MemoryError|OverflowError/],
      ['a growing memory bomb', 'hog = []\nwhile True:\n    hog.append(bytearray(10**7))', 30, /MemoryError/],
      ['a recursion bomb', 'def down(n):\n    return down(n + 1)\ndown(0)', 30, /RecursionError: maximum recursion depth exceeded/],
      // Too deep to unwind within the grace period: stopped, and back to the snapshot.
      [
        'a recursion bomb with the limit raised',
        'import sys\nsys.setrecursionlimit(10**6)\ndef down(n):\n    return down(n + 1)\ndown(0)',
        5,
        /RecursionError|Timed out/,
      ],
      ['a long sleep', 'import time\ntime.sleep(3600)', 1, /Timed out/],
      ['an infinite loop', 'while True:\n    pass', 1, /Timed out/],
      ['an output flood', 'while True:\n    print("x" * 1000)', 2, /Timed out/],
    ];
    for (const [what, code, timeout, expected] of bombs) {
      it(`ends ${what} with a clear error, and the machine lives`, async () => {
        const r = await run(manager, name, code, { timeoutSeconds: timeout });
        assert.match(errorOf(r.result), expected);
        assert.ok(r.chunks.reduce((n, c) => n + c.data.length, 0) <= (1 << 20) + 200, 'output stays capped');
        await run(manager, name, 'hog = None');
        assert.equal(valueOf((await run(manager, name, 'kept')).result), "'state before the attacks'");
      });
    }
  });
}
