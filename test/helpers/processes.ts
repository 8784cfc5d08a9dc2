import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { stripVTControlCharacters } from 'node:util';

/** What a command printed, and how it exited. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Collects a child's output until it closes. */
export function finished(child: ChildProcess): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d));
  child.stderr!.on('data', (d: Buffer) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/**
 * A command in a real terminal (a pty, through `script`), as a person at a shell runs it: what it
 * shows, without cursor moves; keys typed; its exit status.
 */
export class TerminalSession {
  screen = '';
  readonly exited: Promise<number | null>;
  readonly #child: ChildProcess;

  constructor(command: string[], env: NodeJS.ProcessEnv) {
    const line = [...command.map((part) => `'${part}'`), ';', 'echo', `"${EXIT_MARK}$?"`].join(' ');
    this.#child = spawn('script', ['-qfec', line, '/dev/null'], { env: { ...env, TERM: 'xterm' }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child.stdout!.on('data', (d: Buffer) => (this.screen += stripVTControlCharacters(d.toString())));
    this.exited = new Promise((resolve) =>
      this.#child.once('close', () => {
        const status = new RegExp(`${EXIT_MARK}(\\d+)`).exec(this.screen)?.[1];
        resolve(status === undefined ? null : Number(status));
      }),
    );
  }

  type(keys: string): void {
    this.#child.stdin!.write(keys);
  }

  /** Ends the session (and the command, if it still runs). */
  close(): void {
    this.#child.stdin!.end();
    this.#child.kill();
  }
}

/** Printed after the command, with its exit status: `script` does not pass the status on. */
const EXIT_MARK = 'terminal-session-exit:';

/** A TCP port free on 127.0.0.1 now, for a server a test starts. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}
