import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { userInfo } from 'node:os';

/** The version of Jupyter's messaging protocol spoken here. */
export const PROTOCOL_VERSION = '5.3';

const DELIMITER = Buffer.from('<IDS|MSG>');

export interface MessageHeader {
  msg_id: string;
  session: string;
  username: string;
  date: string;
  msg_type: string;
  version: string;
}

export type Content = Record<string, unknown>;

/** A Jupyter message: where it came from (routing identities) and its four parts. */
export interface JupyterMessage {
  ids: Buffer[];
  header: MessageHeader;
  parent_header: Partial<MessageHeader>;
  metadata: Content;
  content: Content;
  buffers: Buffer[];
}

/** A message that cannot be read: its reason, for the kernel's log. */
export class BadMessageError extends Error {}

/**
 * Messages as the connection file's key signs them (HMAC over header, parent header, metadata
 * and content; an empty key signs nothing), read from and made into ZMTP frames.
 */
export class MessageCodec {
  readonly session = randomUUID();
  readonly #username = safeUsername();

  /** `scheme`: one the connection file may name (`ConnectionInfo`). */
  constructor(
    private readonly key: string,
    private readonly scheme: string,
  ) {}

  decode(frames: Buffer[]): JupyterMessage {
    const at = frames.findIndex((frame) => frame.equals(DELIMITER));
    if (at === -1 || frames.length < at + 6) throw new BadMessageError('not a Jupyter message (no delimiter, or parts missing)');
    const [signature, ...parts] = frames.slice(at + 1, at + 6) as [Buffer, Buffer, Buffer, Buffer, Buffer];
    if (this.key) {
      const expected = Buffer.from(this.#sign(parts), 'ascii');
      if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw new BadMessageError('bad signature');
    }
    const [header, parent, metadata, content] = parts.map((part) => {
      try {
        return JSON.parse(part.toString('utf8')) as unknown;
      } catch {
        throw new BadMessageError('a part of the message is not JSON');
      }
    });
    if (!isObject(header) || typeof header.msg_type !== 'string') throw new BadMessageError('a message without a header');
    return {
      ids: frames.slice(0, at),
      header: header as unknown as MessageHeader,
      parent_header: isObject(parent) ? (parent as Partial<MessageHeader>) : {},
      metadata: isObject(metadata) ? metadata : {},
      content: isObject(content) ? content : {},
      buffers: frames.slice(at + 6),
    };
  }

  /** A new message of ours, in answer to `parent` (or to nothing), as the frames to send after `ids`. */
  encode(msgType: string, content: Content, parent?: JupyterMessage, ids: Buffer[] = [], metadata: Content = {}, buffers: Buffer[] = []): Buffer[] {
    const header: MessageHeader = {
      msg_id: randomUUID(),
      session: this.session,
      username: this.#username,
      date: new Date().toISOString(),
      msg_type: msgType,
      version: PROTOCOL_VERSION,
    };
    const parts = [header, parent?.header ?? {}, metadata, content].map((part) => Buffer.from(JSON.stringify(part), 'utf8'));
    return [...ids, DELIMITER, Buffer.from(this.key ? this.#sign(parts) : '', 'ascii'), ...parts, ...buffers];
  }

  #sign(parts: Buffer[]): string {
    const hmac = createHmac(this.scheme.slice('hmac-'.length), this.key);
    for (const part of parts) hmac.update(part);
    return hmac.digest('hex');
  }
}

function isObject(value: unknown): value is Content {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function safeUsername(): string {
  try {
    return userInfo().username;
  } catch {
    return 'kernel';
  }
}
