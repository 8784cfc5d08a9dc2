import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';

/**
 * ZeroMQ's wire protocol (ZMTP 3.1, ZeroMQ RFC 37, with RFC 23's 3.0 subscriptions), the bound
 * side of the three socket types a Jupyter kernel has: ROUTER (shell, control, stdin), PUB
 * (iopub) and REP (heartbeat), with the NULL mechanism Jupyter uses (messages are signed
 * instead). Plain TCP, no native addon: nothing native may enter the VS Code extension, and
 * prebuilt zeromq binaries are missing on some systems.
 */
export type ZmtpSocketType = 'ROUTER' | 'PUB' | 'REP';

/** Peers each socket type may talk to (RFC 37's compatibility table). */
const COMPATIBLE: Record<ZmtpSocketType, readonly string[]> = {
  ROUTER: ['DEALER', 'REQ', 'ROUTER'],
  PUB: ['SUB', 'XSUB'],
  REP: ['REQ', 'DEALER'],
};

const MORE = 1;
const LONG = 2;
const COMMAND = 4;
const GREETING_BYTES = 64;
/** The largest frame taken: a peer that announces more is dropped rather than buffered for. */
const MAX_FRAME_BYTES = 1 << 30;

/** Ours: signature, version 3.1, mechanism NULL, not the server side of a mechanism (NULL has none). */
function greeting(): Buffer {
  const bytes = Buffer.alloc(GREETING_BYTES);
  bytes[0] = 0xff;
  bytes[9] = 0x7f;
  bytes[10] = 3;
  bytes[11] = 1;
  bytes.write('NULL', 12, 'ascii');
  return bytes;
}

function frameHeader(size: number, flags: number): Buffer {
  if (size <= 255) return Buffer.from([flags, size]);
  const header = Buffer.alloc(9);
  header[0] = flags | LONG;
  header.writeBigUInt64BE(BigInt(size), 1);
  return header;
}

/** A command frame: its name, then its body. */
function command(name: string, body: Buffer): Buffer {
  const payload = Buffer.concat([Buffer.from([name.length]), Buffer.from(name, 'ascii'), body]);
  return Buffer.concat([frameHeader(payload.length, COMMAND), payload]);
}

/** READY's metadata: each property a short name and a long value. */
function properties(entries: Record<string, Buffer>): Buffer {
  return Buffer.concat(
    Object.entries(entries).flatMap(([name, value]) => {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(value.length);
      return [Buffer.from([name.length]), Buffer.from(name, 'ascii'), length, value];
    }),
  );
}

function readProperties(body: Buffer): Map<string, Buffer> {
  const found = new Map<string, Buffer>();
  let at = 0;
  while (at < body.length) {
    const nameLength = body[at]!;
    const name = body.subarray(at + 1, at + 1 + nameLength).toString('ascii');
    at += 1 + nameLength;
    if (at + 4 > body.length) break;
    const valueLength = body.readUInt32BE(at);
    found.set(name.toLowerCase(), body.subarray(at + 4, at + 4 + valueLength));
    at += 4 + valueLength;
  }
  return found;
}

/** One connected peer of a bound socket: the handshake, then whole messages both ways. */
export class ZmtpPeer {
  /** The ROUTER's name for it: the identity it gave in READY, or one made up (0, then four random bytes), as libzmq does. */
  identity: Buffer = Buffer.concat([Buffer.from([0]), randomBytes(4)]);
  /** What a PUB sends it: messages starting with any of these. */
  readonly subscriptions: Buffer[] = [];
  #ready = false;
  #pending: Buffer = Buffer.alloc(0);
  #greeted = false;
  #frames: Buffer[] = [];

  constructor(
    private readonly socket: Socket,
    private readonly type: ZmtpSocketType,
    private readonly onReady: (peer: ZmtpPeer) => void,
    private readonly onMessage: (peer: ZmtpPeer, frames: Buffer[]) => void,
  ) {
    socket.setNoDelay(true);
    socket.write(greeting());
    socket.write(command('READY', properties({ 'Socket-Type': Buffer.from(type, 'ascii') })));
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
  }

  get ready(): boolean {
    return this.#ready && !this.socket.destroyed;
  }

  /** Sends one message, frame by frame; dropped when the peer has gone. */
  send(frames: Buffer[]): void {
    if (!this.ready) return;
    const parts = frames.flatMap((frame, i) => [frameHeader(frame.length, i < frames.length - 1 ? MORE : 0), frame]);
    this.socket.write(Buffer.concat(parts));
  }

  close(): void {
    this.socket.destroy();
  }

  #read(chunk: Buffer): void {
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    try {
      if (!this.#greeted) {
        if (this.#pending.length < GREETING_BYTES) return;
        this.#checkGreeting(this.#pending.subarray(0, GREETING_BYTES));
        this.#greeted = true;
        this.#pending = this.#pending.subarray(GREETING_BYTES);
      }
      this.#readFrames();
    } catch (error) {
      // A peer that does not speak ZMTP as we do is dropped; the socket goes on for the others.
      this.socket.destroy(error as Error);
    }
  }

  #checkGreeting(bytes: Buffer): void {
    if (bytes[0] !== 0xff || bytes[9] !== 0x7f) throw new Error('not a ZMTP peer');
    if (bytes[10]! < 3) throw new Error(`ZMTP ${bytes[10]} is too old (3.0 or later is spoken here)`);
    const mechanism = bytes.subarray(12, 32).toString('ascii').replace(/\0+$/, '');
    if (mechanism !== 'NULL') throw new Error(`ZMTP mechanism ${mechanism} is not supported (Jupyter uses NULL)`);
  }

  #readFrames(): void {
    for (;;) {
      const buffer = this.#pending;
      if (buffer.length < 2) return;
      const flags = buffer[0]!;
      const headerLength = flags & LONG ? 9 : 2;
      if (buffer.length < headerLength) return;
      const size = flags & LONG ? Number(buffer.readBigUInt64BE(1)) : buffer[1]!;
      if (size > MAX_FRAME_BYTES) throw new Error(`a frame of ${size} bytes is beyond what is taken here`);
      if (buffer.length < headerLength + size) return;
      const body = buffer.subarray(headerLength, headerLength + size);
      this.#pending = buffer.subarray(headerLength + size);
      if (flags & COMMAND) this.#command(body);
      else this.#frame(body, (flags & MORE) !== 0);
    }
  }

  #command(body: Buffer): void {
    const name = body.subarray(1, 1 + body[0]!).toString('ascii');
    const rest = body.subarray(1 + body[0]!);
    if (name === 'READY') {
      const props = readProperties(rest);
      const peerType = props.get('socket-type')?.toString('ascii') ?? '';
      if (!COMPATIBLE[this.type].includes(peerType)) throw new Error(`a ${peerType || 'nameless'} socket cannot talk to a ${this.type} socket`);
      const identity = props.get('identity');
      if (identity?.length) this.identity = Buffer.from(identity);
      this.#ready = true;
      this.onReady(this);
    } else if (name === 'SUBSCRIBE') this.#subscribe(rest);
    else if (name === 'CANCEL') this.#unsubscribe(rest);
    else if (name === 'PING') {
      // PING: a TTL (2 bytes), then a context the PONG echoes.
      this.socket.write(command('PONG', rest.subarray(2)));
    } else if (name === 'ERROR') this.socket.destroy();
  }

  #frame(body: Buffer, more: boolean): void {
    if (!this.#ready) throw new Error('a message came before the handshake ended');
    this.#frames.push(Buffer.from(body));
    if (more) return;
    const frames = this.#frames;
    this.#frames = [];
    // A subscriber's (un)subscription in ZMTP 3.0's form: one frame, 1 or 0, then the prefix.
    if (this.type === 'PUB' && frames.length === 1 && (frames[0]![0] === 1 || frames[0]![0] === 0)) {
      if (frames[0]![0] === 1) this.#subscribe(frames[0]!.subarray(1));
      else this.#unsubscribe(frames[0]!.subarray(1));
      return;
    }
    this.onMessage(this, frames);
  }

  #subscribe(prefix: Buffer): void {
    this.subscriptions.push(Buffer.from(prefix));
  }

  #unsubscribe(prefix: Buffer): void {
    const at = this.subscriptions.findIndex((s) => s.equals(prefix));
    if (at !== -1) this.subscriptions.splice(at, 1);
  }
}

/** A bound ZMTP socket of one type, and its peers. */
export class ZmtpSocket {
  readonly #server: Server;
  readonly #peers = new Set<ZmtpPeer>();

  private constructor(
    readonly type: ZmtpSocketType,
    onMessage: (peer: ZmtpPeer, frames: Buffer[]) => void,
  ) {
    this.#server = createServer((socket) => {
      const peer = new ZmtpPeer(
        socket,
        type,
        (ready) => {
          // A peer that connects again under the identity it had replaces its old connection.
          for (const other of this.#peers) if (other !== ready && type === 'ROUTER' && other.identity.equals(ready.identity)) this.#drop(other);
        },
        onMessage,
      );
      this.#peers.add(peer);
      socket.on('close', () => this.#peers.delete(peer));
      socket.on('error', () => this.#peers.delete(peer));
    });
  }

  /** A socket bound to `host:port`, taking each message a peer sends. */
  static async bind(type: ZmtpSocketType, host: string, port: number, onMessage: (peer: ZmtpPeer, frames: Buffer[]) => void = () => {}): Promise<ZmtpSocket> {
    const socket = new ZmtpSocket(type, onMessage);
    await new Promise<void>((resolve, reject) => {
      socket.#server.once('error', reject);
      socket.#server.listen(port, host, () => {
        socket.#server.off('error', reject);
        resolve();
      });
    });
    return socket;
  }

  /** ROUTER: sends `frames` to the peer the first frame names (dropped when none has that identity, as ROUTER does). */
  route(identity: Buffer, frames: Buffer[]): void {
    for (const peer of this.#peers) if (peer.ready && peer.identity.equals(identity)) return peer.send(frames);
  }

  /** PUB: sends `frames` to every peer subscribed to a prefix of the first frame. */
  publish(frames: Buffer[]): void {
    const topic = frames[0] ?? Buffer.alloc(0);
    for (const peer of this.#peers) {
      if (peer.ready && peer.subscriptions.some((prefix) => topic.subarray(0, prefix.length).equals(prefix))) peer.send(frames);
    }
  }

  async close(): Promise<void> {
    for (const peer of this.#peers) this.#drop(peer);
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #drop(peer: ZmtpPeer): void {
    peer.close();
    this.#peers.delete(peer);
  }
}
