/**
 * Perennial on Windows: the built CLI, the server it starts and its sandbox machines, all on the
 * Windows build of Node under Wine (`scripts/test-windows.sh` sets it up), on a data dir whose
 * path has a space and a letter beyond ASCII. The test itself runs on this system's Node and
 * looks at what the Windows processes did through their output, the data dir and the server's API.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { PNG_CODE } from '../helpers/machines.ts';
import { freePort } from '../helpers/processes.ts';

const WINE = process.env.PERENNIAL_WINE;
const NODE_EXE = process.env.PERENNIAL_WINE_NODE;
const PREFIX = process.env.WINEPREFIX;
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const SHIM = fileURLToPath(new URL('./wine-shim.cjs', import.meta.url));
const CONNECT = fileURLToPath(new URL('../jupyter/connect_kernel.py', import.meta.url));
const DATA_DIR = 'C:\\users\\Zoë Doe\\perennial data';
/** A path of this system as Windows programs under Wine reach it. */
const windowsPath = (path: string) => `Z:${path.replaceAll('/', '\\')}`;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe(
  'Perennial on Windows (Node for Windows under Wine)',
  { skip: !WINE || !NODE_EXE || !PREFIX ? 'run by scripts/test-windows.sh' : false, timeout: 600_000 },
  () => {
    const onLinux = join(PREFIX ?? '', 'drive_c', 'users', 'Zoë Doe');
    let outputs: string;
    let runs = 0;
    let name: string;

    /** `perennial ARGS` on Windows. Its output goes to files: node.exe cannot write to a pipe of this system under Wine. */
    async function perennial(...args: string[]): Promise<Run> {
      const [out, err] = ['out', 'err'].map((kind) => join(outputs, `${++runs}.${kind}`)) as [string, string];
      const stdout = openSync(out, 'w');
      const stderr = openSync(err, 'w');
      const env: NodeJS.ProcessEnv = { ...process.env };
      delete env.PERENNIAL_PYTHON;
      const child = spawn(WINE!, [NODE_EXE!, '--require', windowsPath(SHIM), windowsPath(CLI), '--data-dir', DATA_DIR, ...args], {
        stdio: ['ignore', stdout, stderr],
        env,
      });
      closeSync(stdout);
      closeSync(stderr);
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      return { code, stdout: readFileSync(out, 'utf8').replaceAll('\r\n', '\n'), stderr: readFileSync(err, 'utf8').replaceAll('\r\n', '\n') };
    }

    async function value(code: string, machine = name): Promise<string> {
      const run = await perennial('exec', '-m', machine, code);
      assert.equal(run.code, 0, run.stderr);
      return run.stdout.trim();
    }

    before(() => {
      outputs = mkdtempSync(join(tmpdir(), 'perennial-windows-'));
      rmSync(onLinux, { recursive: true, force: true });
    });
    after(async () => {
      await perennial('stop');
      rmSync(outputs, { recursive: true, force: true });
      rmSync(onLinux, { recursive: true, force: true });
    });

    it('makes a sandbox machine and runs code, on a data dir with a space and a non-ASCII letter in its path', async () => {
      const run = await perennial('exec', 'x = 6 * 7\nx');
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stdout, '42\n');
      name = /^machine: (\S+)$/m.exec(run.stderr)![1]!;
      assert.ok(existsSync(join(onLinux, 'perennial data', 'machines', name)), 'the machine is in the data dir');
      const status = await perennial('status');
      assert.match(status.stdout, /warning: there is no bubblewrap on Windows: sandbox machines are confined by Node's permission model/);
    });

    it('shows a figure, saved as a PNG file', async () => {
      const run = await perennial(
        'exec',
        '-m',
        name,
        '--images',
        'C:\\users\\Zoë Doe\\figures',
        `${PNG_CODE}\nclass Figure:\n    def _repr_png_(self):\n        return make_png(4, 3)\nFigure()`,
      );
      assert.equal(run.code, 0, run.stderr);
      const figures = readdirSync(join(onLinux, 'figures'));
      assert.equal(figures.length, 1);
      assert.deepEqual([...readFileSync(join(onLinux, 'figures', figures[0]!)).subarray(1, 4)], [...Buffer.from('PNG')]);
    });

    it('swaps a machine out and back in', async () => {
      const swap = await perennial('machine', 'swap', name);
      assert.equal(swap.code, 0, swap.stderr);
      assert.equal(await value('x + 1'), '43');
    });

    it('saves every machine at perennial stop, and restores them after', async () => {
      assert.equal(await value('y = 5\ny'), '5');
      const stop = await perennial('stop');
      assert.equal(stop.code, 0, stop.stderr);
      assert.match(stop.stdout + stop.stderr, /its machines are saved/);
      assert.equal(await value('y'), '5');
    });

    it('forks a machine, and takes a checkpoint and rolls back to it', async () => {
      const fork = await perennial('machine', 'fork', name);
      assert.equal(fork.code, 0, fork.stderr);
      assert.equal(await value('x', fork.stdout.trim()), '42');
      assert.equal((await perennial('checkpoint', name, '--label', 'before')).code, 0);
      assert.equal(await value('x = 0\nx'), '0');
      const back = await perennial('rollback', name, 'before');
      assert.equal(back.code, 0, back.stderr);
      assert.equal(await value('x'), '42');
    });

    it('interrupts an endless loop on request; the machine lives and keeps its state', async () => {
      const info = JSON.parse(readFileSync(join(onLinux, 'perennial data', 'server.json'), 'utf8')) as { url: string; token: string };
      const headers = { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' };
      const api = async (path: string, body?: unknown) =>
        (
          await fetch(info.url + path, { method: body === undefined ? 'GET' : 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) })
        ).json() as Promise<Record<string, unknown>>;
      const { instruction_seq: seq } = await api(`/v1/machine/${name}/exec`, {
        instruction: { code: 'print("looping", flush=True)\nwhile True:\n    pass', timeout_seconds: 0 },
      });
      // Interrupted once it loops: its output says so (busy alone is before the cell has begun, under Wine's pace).
      const stream = (await fetch(`${info.url}/v1/machine/${name}/exec/${String(seq)}/stream-result`, { headers })).body!.getReader();
      let streamed = '';
      while (!streamed.includes('looping')) streamed += new TextDecoder().decode((await stream.read()).value);
      assert.deepEqual(await api(`/v1/machine/${name}/interrupt`, {}), { cancelled: 0, interrupted: true });
      for (let part = await stream.read(); !part.done; part = await stream.read()) streamed += new TextDecoder().decode(part.value);
      assert.match(streamed, /KeyboardInterrupt/);
      assert.equal(await value('x'), '42');
    });

    it('stops code past its timeout by an interrupt; the machine keeps its state', async () => {
      const run = await perennial('exec', '-m', name, '--timeout', '2', 'while True:\n    pass');
      assert.equal(run.code, 1);
      assert.match(run.stderr, /KeyboardInterrupt/);
      assert.doesNotMatch(run.stderr, /did not stop/, 'stopped by the interrupt, not the hard stop');
      assert.equal(await value('x'), '42');
    });

    it('installs a Jupyter kernelspec whose argv runs on Windows; its kernel answers kernel_info and a cell', async () => {
      const prefix = join(outputs, 'jupyter prefix');
      const install = await perennial('kernel', 'install', '--prefix', windowsPath(prefix), '--name', 'perennial-windows', '--engine', 'sandbox');
      assert.equal(install.code, 0, install.stderr);
      const spec = JSON.parse(readFileSync(join(prefix, 'share', 'jupyter', 'kernels', 'perennial-windows', 'kernel.json'), 'utf8')) as {
        argv: string[];
        interrupt_mode: string;
      };
      assert.equal(spec.argv[0]!.toLowerCase(), windowsPath(resolve(NODE_EXE!)).toLowerCase());
      assert.deepEqual(spec.argv.slice(1), [
        windowsPath(CLI),
        '--data-dir',
        DATA_DIR,
        'kernel',
        '--connection-file',
        '{connection_file}',
        '--engine',
        'sandbox',
      ]);
      assert.equal(spec.interrupt_mode, 'message');

      // Jupyter would run the argv; here Wine does, with the connection file Jupyter would write.
      const ports = await Promise.all(Array.from({ length: 5 }, freePort));
      const connectionFile = join(outputs, 'kernel-windows.json');
      const [shell, iopub, stdin, control, hb] = ports;
      const connection = { transport: 'tcp', ip: '127.0.0.1', shell_port: shell, iopub_port: iopub, stdin_port: stdin, control_port: control, hb_port: hb };
      writeFileSync(connectionFile, JSON.stringify({ ...connection, key: 'a-key', signature_scheme: 'hmac-sha256', kernel_name: 'perennial-windows' }));
      const log = openSync(join(outputs, 'kernel.log'), 'w');
      const argv = spec.argv.map((arg) => (arg === '{connection_file}' ? windowsPath(connectionFile) : arg));
      const kernel = spawn(WINE!, argv, { stdio: ['ignore', log, log], env: { ...process.env, NODE_OPTIONS: `--require ${windowsPath(SHIM)}` } });
      closeSync(log);
      const exited = new Promise<number | null>((resolve) => kernel.once('exit', resolve));
      const client = spawn(process.env.PERENNIAL_TEST_PYTHON ?? '/usr/bin/python3', [CONNECT, connectionFile], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      client.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      client.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => client.once('exit', resolve));
      assert.equal(code, 0, `${err}\n${readFileSync(join(outputs, 'kernel.log'), 'utf8')}`);
      const answered = JSON.parse(out) as {
        implementation: string;
        language: string;
        status: string;
        reply: Record<string, unknown>;
        outputs: Array<{ type: string; content: Record<string, unknown> }>;
      };
      assert.equal(answered.implementation, 'perennial');
      assert.equal(answered.language, 'python');
      assert.equal(answered.status, 'ok', `${JSON.stringify(answered)}\n${readFileSync(join(outputs, 'kernel.log'), 'utf8')}`);
      const printed = answered.outputs
        .filter((o) => o.type === 'stream')
        .map((o) => o.content.text as string)
        .join('');
      assert.match(printed, /emscripten/, 'a sandbox machine ran the cell');
      assert.deepEqual(answered.outputs.find((o) => o.type === 'execute_result')?.content.data, { 'text/plain': '42' });
      assert.equal(await exited, 0, 'the kernel stopped when asked');
    });

    it('says plainly that no Python was found for a python machine, and makes none', async () => {
      const engines = async () => (JSON.parse((await perennial('machine', 'list', '--json')).stdout) as Array<{ engine: string }>).map((m) => m.engine);
      const before = await engines();
      const run = await perennial('machine', 'new', '--engine', 'python');
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, /No Python 3\.8 or newer found for python machines \(py -3: not found; python: not found; python3: not found\)/);
      assert.deepEqual(await engines(), before);
      assert.ok(before.every((engine) => engine === 'sandbox'));
    });
  },
);
