import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * A person's key: `prn_<id>_<secret>`, a bearer token as the server's own is (the ForeverVM SDKs
 * and CLI send it unchanged, in a header or a WebSocket's query). The id finds the key's record;
 * only the secret's hash is kept, so the key is shown once, when made.
 */
const KEY_PATTERN = /^prn_([A-Za-z0-9-]{12})_([A-Za-z0-9_-]{43})$/;

export interface MadeKey {
  id: string;
  /** The whole key, to show once. */
  key: string;
  hash: string;
}

export function makeKey(): MadeKey {
  // Ids avoid "_", which separates the parts.
  const id = randomBytes(9).toString('base64url').replace(/_/g, '-');
  const secret = randomBytes(32).toString('base64url');
  return { id, key: `prn_${id}_${secret}`, hash: hashOf(secret) };
}

/** The id and secret of what looks like a key, or undefined (another kind of token). */
export function readKey(presented: string): { id: string; secret: string } | undefined {
  const match = KEY_PATTERN.exec(presented);
  return match ? { id: match[1]!, secret: match[2]! } : undefined;
}

/** Whether `secret` is the one whose hash was kept; in constant time. */
export function secretMatches(secret: string, hash: string): boolean {
  const presented = Buffer.from(hashOf(secret), 'hex');
  const kept = Buffer.from(hash, 'hex');
  return presented.length === kept.length && timingSafeEqual(presented, kept);
}

function hashOf(secret: string): string {
  // A key's secret is 256 random bits: a fast hash is enough (no password to stretch).
  return createHash('sha256').update(secret).digest('hex');
}
