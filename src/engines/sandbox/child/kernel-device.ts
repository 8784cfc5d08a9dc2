/**
 * The kernel's line to the host for what is not output, made to work while Python holds the
 * thread: a device file, `/dev/perennial-host`, to which the kernel writes JSON lines. A question
 * (`input()`) crosses to the host over IPC, and the kernel reads its answer back from the same
 * descriptor: the read waits for it (`HostChannel.awaitAnswer`), and an interrupt ends the wait with
 * EINTR, which Python turns into the KeyboardInterrupt it has pending. What a cell displays crosses
 * as it is displayed. That a cell began stays in this process: interrupts reach it from then on. The device lives in Emscripten's file system, not in the machine's memory, so
 * every boot makes it.
 */
import type { KernelDisplay } from '../../engine.ts';
import type { ChildMessage } from '../protocol.ts';
import type { HostChannel } from './host-channel.ts';

/** Where the kernel finds it (`pyodide_driver.HOST_DEVICE`). */
const DEVICE_PATH = '/dev/perennial-host';
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

/** One open descriptor: what was written since the last whole line, then a question's answer as read so far. */
interface Exchange {
  written: string;
  question?: number;
  answer?: Uint8Array;
  answerRead: number;
}

/** A question and a display go to the host; `started` (the cell began) stays here. */
type Message = Extract<ChildMessage, { type: 'input' }> | Extract<ChildMessage, { type: 'display' }> | { type: 'started' };

export function installKernelDevice(FS: DeviceFS, host: Pick<HostChannel, 'send' | 'cellStarted' | 'awaitAnswer'>): void {
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
      if (exchange.question !== undefined) throw new FS.ErrnoError(EINVAL);
      exchange.written += decoder.decode(buffer.subarray(offset, offset + length), { stream: true });
      if (!exchange.written.endsWith('\n')) return length;
      // User code can write here too: whatever it writes is at most a question to the person, or a display.
      const message = parseMessage(exchange.written, asked + 1);
      exchange.written = '';
      if (!message) throw new FS.ErrnoError(EINVAL);
      if (message.type === 'started') {
        host.cellStarted();
        return length;
      }
      if (message.type === 'input') exchange.question = ++asked;
      host.send(message);
      return length;
    },
    read(stream, buffer, offset, length) {
      const exchange = exchangeOf(stream);
      if (exchange.question === undefined) throw new FS.ErrnoError(EINVAL);
      if (!exchange.answer) {
        const line = host.awaitAnswer(exchange.question);
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

/** A line the kernel wrote, as the message the host gets (`n`: the number a question would take). */
function parseMessage(text: string, n: number): Message | undefined {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (parsed.type === 'input' && typeof parsed.prompt === 'string') return { type: 'input', n, prompt: parsed.prompt, password: parsed.password === true };
  if (parsed.type === 'display' && parsed.entry && typeof parsed.entry === 'object') return { type: 'display', entry: parsed.entry as KernelDisplay };
  if (parsed.type === 'started') return { type: 'started' };
  return undefined;
}
