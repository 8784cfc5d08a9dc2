/**
 * `input()` in a sandbox machine. The kernel asks through a device file: it writes its question, a
 * JSON line, to `/dev/perennial-questions` and reads the answer back from the same descriptor.
 * The question crosses to the host over IPC; the read waits for the answer (`HostChannel`), and an
 * interrupt ends it with EINTR, which Python turns into the KeyboardInterrupt it has pending.
 * The device lives in Emscripten's file system, not in the machine's memory, so every boot makes it.
 */
import type { ChildMessage } from '../protocol.ts';
import type { HostChannel } from './host-channel.ts';

/** Where the kernel finds it (`pyodide_driver.QUESTIONS_DEVICE`). */
const DEVICE_PATH = '/dev/perennial-questions';
/** A major number Emscripten's own devices do not use. */
const DEVICE_MAJOR = 250;
const EINTR = 27;
const EINVAL = 28;

/** The parts of Emscripten's file system a device needs. */
export interface DeviceFS {
  makedev(major: number, minor: number): number;
  registerDevice(dev: number, ops: DeviceOps): void;
  mkdev(path: string, mode: number, dev: number): unknown;
  ErrnoError: new (errno: number) => Error;
}

interface DeviceOps {
  write(stream: object, buffer: Uint8Array, offset: number, length: number): number;
  read(stream: object, buffer: Uint8Array, offset: number, length: number): number;
}

/** One open descriptor: the question as written so far, then its answer as read so far. */
interface Exchange {
  written: string;
  n?: number;
  answer?: Uint8Array;
  answerRead: number;
}

type Question = Omit<Extract<ChildMessage, { type: 'input' }>, 'type' | 'n'>;

export function installQuestionDevice(FS: DeviceFS, host: HostChannel): void {
  const exchanges = new WeakMap<object, Exchange>();
  const decoder = new TextDecoder();
  let asked = 0;
  const exchangeOf = (stream: object) => {
    let exchange = exchanges.get(stream);
    if (!exchange) exchanges.set(stream, (exchange = { written: '', answerRead: 0 }));
    return exchange;
  };
  const dev = FS.makedev(DEVICE_MAJOR, 0);
  FS.registerDevice(dev, {
    write(stream, buffer, offset, length) {
      const exchange = exchangeOf(stream);
      if (exchange.n !== undefined) throw new FS.ErrnoError(EINVAL);
      exchange.written += decoder.decode(buffer.subarray(offset, offset + length), { stream: true });
      if (exchange.written.endsWith('\n')) {
        // User code can write here too: whatever it writes is at most a question to the person.
        const question = parseQuestion(exchange.written);
        if (!question) throw new FS.ErrnoError(EINVAL);
        exchange.n = ++asked;
        host.send({ type: 'input', n: exchange.n, ...question });
      }
      return length;
    },
    read(stream, buffer, offset, length) {
      const exchange = exchangeOf(stream);
      if (exchange.n === undefined) throw new FS.ErrnoError(EINVAL);
      if (!exchange.answer) {
        const line = host.awaitAnswer(exchange.n);
        if (line === undefined) throw new FS.ErrnoError(EINTR);
        exchange.answer = new TextEncoder().encode(line);
      }
      const chunk = exchange.answer.subarray(exchange.answerRead, exchange.answerRead + length);
      buffer.set(chunk, offset);
      exchange.answerRead += chunk.length;
      return chunk.length;
    },
  });
  FS.mkdev(DEVICE_PATH, 0o666, dev);
}

function parseQuestion(text: string): Question | undefined {
  try {
    const { prompt, password, confirm } = JSON.parse(text) as Record<string, unknown>;
    if (typeof prompt !== 'string') return undefined;
    return { prompt, password: password === true, confirm: confirm === true };
  } catch {
    return undefined;
  }
}
