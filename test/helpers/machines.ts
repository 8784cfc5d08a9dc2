import { mkdtemp, rm } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MachineManager, type ExecOptions, type MachineManagerOptions } from '../../src/machines/machine-manager.ts';
import type { ExecResult, OutputChunk } from '../../src/shared/types.ts';
import type { EngineName, NewMachineOptions } from '../../src/shared/requests.ts';
import { ForeverVMError } from '../../src/shared/forevervm-error.ts';
import { seedSandboxBase } from './sandbox-base.ts';
import { joinTestCluster } from './test-cluster.ts';

/**
 * The interpreter python-engine tests use: Debian's, which has numpy, matplotlib and dill
 * (`.ci/run` installs them). Override with PERENNIAL_TEST_PYTHON.
 */
export const TEST_PYTHON = process.env.PERENNIAL_TEST_PYTHON ?? '/usr/bin/python3';

/** Engines the shared suites run against (PERENNIAL_TEST_ENGINES=python,sandbox to choose). */
export const ENGINES_UNDER_TEST = (process.env.PERENNIAL_TEST_ENGINES ?? 'python,sandbox').split(',') as EngineName[];

/** Defines `make_png(width, height)`: a PNG made with the standard library only, for engines without matplotlib. */
export const PNG_CODE = String.raw`import struct, zlib
def make_png(width, height):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    pixels = b"".join(b"\x00" + bytes((x * 7 + y) % 256 for x in range(width * 3)) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b"")`;

/**
 * A fresh data dir, its sandbox engine's base image already made (`seedSandboxBase`) when sandbox
 * machines are under test; `empty`: nothing in it at all.
 */
export async function tempDataDir({ empty = false } = {}): Promise<{ dir: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'perennial-test-'));
  if (!empty && ENGINES_UNDER_TEST.includes('sandbox')) await seedSandboxBase(dir);
  if (!empty) await joinTestCluster(dir);
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true, maxRetries: 5 }) };
}

/** A manager on a fresh data dir, with quick checkpoints so tests need not wait long. */
export async function openManager(options: Partial<MachineManagerOptions> & { dataDir: string }): Promise<MachineManager> {
  return MachineManager.open({ saveDelayMs: 100, interruptGraceMs: 1000, ...options });
}

/**
 * A manager on a fresh data dir for the enclosing `describe`: opened before its tests, closed and
 * removed after them. Read `manager` inside hooks and tests, not while registering them.
 */
export function managerFixture(options: Partial<MachineManagerOptions> = {}, dataDir: { empty?: boolean } = {}): { manager: MachineManager } {
  const fixture = {} as { manager: MachineManager };
  let cleanup: (() => Promise<void>) | undefined;
  before(async () => {
    const data = await tempDataDir(dataDir);
    cleanup = data.cleanup;
    fixture.manager = await openManager({ ...options, dataDir: data.dir });
  });
  after(async () => {
    await fixture.manager?.close();
    await cleanup?.();
  });
  return fixture;
}

/**
 * An interpreter other than TEST_PYTHON, to tell which one made a machine: a venv of it without
 * packages, kept in `.cache` between runs. Its `sys.prefix` is `dir`.
 */
export function otherPython(): { dir: string; python: string } {
  const dir = join(process.cwd(), '.cache', 'python-without-packages');
  if (!existsSync(join(dir, 'bin', 'python3'))) execFileSync(TEST_PYTHON, ['-m', 'venv', '--without-pip', dir]);
  return { dir, python: join(dir, 'bin', 'python3') };
}

export function machineOptions(engine: EngineName, extra: NewMachineOptions = {}): NewMachineOptions {
  return { engine, ...(engine === 'python' ? { python: TEST_PYTHON } : {}), ...extra };
}

export interface Run {
  seq: number;
  result: ExecResult;
  chunks: OutputChunk[];
  stdout: string;
  stderr: string;
}

/** Runs code and collects everything it produced. */
export async function run(manager: MachineManager, name: string, code: string, options: ExecOptions = {}): Promise<Run> {
  const chunks: OutputChunk[] = [];
  const { seq, result } = await manager.run(name, code, { ...options, onOutput: (c) => chunks.push(c) });
  const text = (stream: string) =>
    chunks
      .filter((c) => c.stream === stream)
      .map((c) => c.data)
      .join('\n');
  return { seq, result, chunks, stdout: text('stdout'), stderr: text('stderr') };
}

/** The value of a successful result; fails the test with the traceback otherwise. */
export function valueOf(result: ExecResult): string | null {
  if ('error' in result) throw new Error(`expected a value, got an error:\n${result.error}`);
  return result.value;
}

export function errorOf(result: ExecResult): string {
  if (!('error' in result)) throw new Error(`expected an error, got value ${result.value}`);
  return result.error;
}

/** Waits until `check` holds, polling; fails after `ms`. */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** What a request to a server answers: its error's code when it fails (the WebSocket REPL carries no status), or 'ok'. */
export async function outcome(request: () => Promise<unknown>): Promise<string> {
  try {
    await request();
    return 'ok';
  } catch (error) {
    if (error instanceof ForeverVMError) return error.code;
    throw error;
  }
}
