import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import pg from 'pg';
import { freePort } from './processes.ts';

/**
 * The engines a cluster runs on, started for a test as real servers: Debian's PostgreSQL and the
 * npm package s3rver as the S3-compatible bucket. Each is a child process on 127.0.0.1 that the
 * test stops (and may stop early, to see a node meet an engine that is down).
 */
export interface Service {
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
}

export interface Postgres extends Service {
  /** A connection URL to the `postgres` database, as an operator passes it to `--cluster`. */
  url: string;
  /** A URL to a new database of its own, for one test's cluster. */
  database(name: string): Promise<string>;
  /** Stops the server, keeping its files, and starts it again on the same port. */
  pause(): Promise<void>;
  resume(): Promise<void>;
}

export interface Bucket extends Service {
  /** The `--store` URL: `s3://<bucket>/<prefix>`. */
  url: string;
  /** The S3 endpoint, for `--store-endpoint`. */
  endpoint: string;
  /** The credentials s3rver takes, as the AWS SDK reads them from the environment. */
  env: Record<string, string>;
  /** Every object the bucket holds, by key (read from s3rver's folder). */
  keys(): string[];
  pause(): Promise<void>;
  resume(): Promise<void>;
}

/** Debian keeps PostgreSQL's programs under /usr/lib/postgresql/<version>/bin, off PATH. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'postgres'))) : [];
  if (!versions.length) throw new Error('PostgreSQL is not installed: scripts/test-deps.sh installs Debian\'s "postgresql"');
  return join(root, versions.sort((a, b) => Number(b) - Number(a))[0]!, 'bin');
}

/** PostgreSQL refuses to run as root: as root, the tests run it as the `postgres` user the package made. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root, and there is no postgres user to run PostgreSQL as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Resolves when the child prints a line matching `ready`; rejects with what it printed if it exits first. */
function untilReady(child: ChildProcess, ready: RegExp, what: string): Promise<RegExpExecArray> {
  let printed = '';
  return new Promise((resolve, reject) => {
    const look = (data: Buffer) => {
      printed += data.toString();
      const match = ready.exec(printed);
      if (match) {
        child.stdout?.off('data', look);
        child.stderr?.off('data', look);
        resolve(match);
      }
    };
    child.stdout?.on('data', look);
    child.stderr?.on('data', look);
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}) before it was ready:\n${printed}`)));
  });
}

/** Stops a server: SIGINT is PostgreSQL's fast shutdown, which ends its clients' sessions rather than wait for them. */
async function stopChild(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}

export async function startPostgres(): Promise<Postgres> {
  const bin = postgresBin();
  const user = postgresUser();
  const root = mkdtempSync(join(tmpdir(), 'perennial-pg-'));
  const data = join(root, 'data');
  if (user) chownSync(root, user.uid, user.gid);
  const as = user ? { uid: user.uid, gid: user.gid } : {};
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'perennial', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], {
    ...as,
    stdio: 'pipe',
  });
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', root, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200'],
      { ...as, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    await untilReady(child, /ready to accept connections/, 'PostgreSQL');
  };
  await start();
  const url = `postgres://perennial@127.0.0.1:${port}/postgres`;
  return {
    url,
    async database(name) {
      const client = new pg.Client(url);
      await client.connect();
      try {
        await client.query(`CREATE DATABASE "${name}"`);
      } finally {
        await client.end();
      }
      return `postgres://perennial@127.0.0.1:${port}/${name}`;
    },
    pause: () => stopChild(child, 'SIGINT'),
    resume: start,
    async stop() {
      await stopChild(child, 'SIGINT');
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export async function startBucket(name = 'perennial-test'): Promise<Bucket> {
  const directory = mkdtempSync(join(tmpdir(), 'perennial-s3-'));
  const program = join(import.meta.dirname, '..', '..', 'node_modules', 's3rver', 'bin', 's3rver.js');
  let child: ChildProcess | undefined;
  let port = 0;
  const start = async () => {
    child = spawn(process.execPath, [program, '-d', directory, '-a', '127.0.0.1', '-p', String(port), '-s', '--configure-bucket', name], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    port = Number((await untilReady(child, /listening on [\d.]+:(\d+)/, 's3rver'))[1]);
  };
  await start();
  const endpoint = `http://127.0.0.1:${port}`;
  // A folder s3rver removes while it is read is no object's any more.
  const entries = (path: string) => {
    try {
      return readdirSync(path, { withFileTypes: true });
    } catch {
      return [];
    }
  };
  const keys = (dir: string, prefix = ''): string[] =>
    entries(join(dir, prefix)).flatMap((entry) => {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      // s3rver keeps an object as a folder of its content and metadata files, named `<key>._S3rver_object`.
      if (entry.name.endsWith('._S3rver_object')) return [path.slice(0, -'._S3rver_object'.length)];
      return entry.isDirectory() ? keys(dir, path) : [];
    });
  return {
    url: `s3://${name}/cluster`,
    endpoint,
    env: { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' },
    keys: () => keys(join(directory, name)),
    pause: () => stopChild(child),
    resume: start,
    async stop() {
      await stopChild(child);
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
