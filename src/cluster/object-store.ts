import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { tempPathFor } from '../platform/atomic-file.ts';
import { CodedError } from '../platform/coded-error.ts';

/** The bucket could not be reached or refused a request: what was asked is not done, and nothing committed is touched. */
export class StoreUnavailableError extends CodedError {
  static override readonly errorCode = 'StoreUnavailable';
}

/** Where a cluster keeps its objects: an S3 URL, and the endpoint of a store that is not AWS. */
export interface StoreLocation {
  /** `s3://<bucket>/<prefix>`. */
  url: string;
  /** An S3-compatible service (MinIO, Ceph, Garage...): its URL; AWS when absent. Path-style requests then. */
  endpoint?: string;
  /** The region; else the AWS SDK's own (AWS_REGION, the profile), else us-east-1. */
  region?: string;
}

/** Reads `s3://bucket/prefix` (the prefix may be empty). */
export function parseStoreUrl(url: string): { bucket: string; prefix: string } {
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(url);
  if (!match)
    throw new StoreUnavailableError(
      `The store must be an S3 URL, s3://<bucket>/<prefix> (a bucket name is 3-63 lowercase letters, digits, dots and dashes): ${url}`,
    );
  return { bucket: match[1]!, prefix: (match[2] ?? '').replace(/\/+$/, '') };
}

/**
 * An S3-compatible bucket under a prefix, through the AWS SDK: its credentials come from where the
 * SDK looks (environment, profile, an instance's or a pod's role). Every key a cluster writes
 * names its content or is written once, so no request needs S3's conditional writes, which
 * not every store has.
 */
export class ObjectStore {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #prefix: string;
  /** The store, for messages: its URL, and its endpoint when not AWS. */
  readonly description: string;

  constructor(location: StoreLocation) {
    // The SDK warns Node 20 users that its later releases will need Node 22; this one is bundled,
    // and changes only with Perennial, so the warning would be about nothing they run.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const { bucket, prefix } = parseStoreUrl(location.url);
    this.#bucket = bucket;
    this.#prefix = prefix ? `${prefix}/` : '';
    this.description = location.endpoint ? `${location.url} at ${location.endpoint}` : location.url;
    this.#client = new S3Client({
      ...(location.endpoint ? { endpoint: location.endpoint, forcePathStyle: true } : {}),
      region: location.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1',
      // Checksums only where S3 requires them: stores that are not AWS refuse the newer headers.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
    });
  }

  /** Throws a StoreUnavailableError unless the bucket answers. */
  async check(): Promise<void> {
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#bucket }));
    } catch (error) {
      if (error instanceof S3ServiceException && error.$metadata.httpStatusCode === 404)
        throw new StoreUnavailableError(`The bucket ${this.#bucket} does not exist (${this.description}): make it, or name another with --store`);
      throw this.#unavailable('be reached', undefined, error);
    }
  }

  async has(key: string): Promise<boolean> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }));
      return true;
    } catch (error) {
      if (isMissing(error)) return false;
      throw this.#unavailable('read', key, error);
    }
  }

  async put(key: string, body: Uint8Array): Promise<void> {
    await this.#send(`write ${key}`, () => this.#client.send(new PutObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key, Body: body })));
  }

  /** The object's bytes, or null when there is none. */
  async get(key: string): Promise<Uint8Array | null> {
    try {
      const answer = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }));
      return await answer.Body!.transformToByteArray();
    } catch (error) {
      if (isMissing(error)) return null;
      throw this.#unavailable('read', key, error);
    }
  }

  /** Writes the object to `path` (replacing it whole, once read); answers false when there is none. */
  async download(key: string, path: string): Promise<boolean> {
    const temp = tempPathFor(path);
    try {
      const answer = await this.#client.send(new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + key }));
      await pipeline(answer.Body as Readable, createWriteStream(temp, { mode: 0o600 }));
      await rename(temp, path);
      return true;
    } catch (error) {
      await rm(temp, { force: true });
      if (isMissing(error)) return false;
      throw this.#unavailable('read', key, error);
    }
  }

  /** Every key under `prefix` (a page at a time). */
  async *list(prefix: string): AsyncGenerator<string> {
    let token: string | undefined;
    do {
      const page = await this.#send(`list ${prefix}`, () =>
        this.#client.send(new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: this.#prefix + prefix, ContinuationToken: token })),
      );
      for (const object of page.Contents ?? []) if (object.Key) yield object.Key.slice(this.#prefix.length);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** Removes the objects `keys` (a thousand to a request, as S3 takes them). */
  async delete(keys: string[]): Promise<void> {
    for (let at = 0; at < keys.length; at += 1000) {
      const batch = keys.slice(at, at + 1000);
      const answer = await this.#send(`remove ${batch.length} objects`, () =>
        this.#client.send(
          new DeleteObjectsCommand({ Bucket: this.#bucket, Delete: { Objects: batch.map((key) => ({ Key: this.#prefix + key })), Quiet: true } }),
        ),
      );
      const failed = answer.Errors ?? [];
      if (failed.length)
        throw new StoreUnavailableError(`The bucket ${this.description} kept ${failed.length} objects it was asked to remove: ${failed[0]!.Message}`);
    }
  }

  close(): void {
    this.#client.destroy();
  }

  async #send<T>(what: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      throw this.#unavailable(what, undefined, error);
    }
  }

  #unavailable(what: string, key: string | undefined, error: unknown): StoreUnavailableError {
    const reason = error instanceof S3ServiceException ? `${error.name}: ${error.message}` : (error as Error).message || String(error);
    return new StoreUnavailableError(`The bucket ${this.description} could not ${what}${key ? ` ${key}` : ''}: ${reason}`, { cause: error });
  }
}

function isMissing(error: unknown): boolean {
  // A missing bucket is NoSuchBucket, which `check` finds at start.
  return error instanceof S3ServiceException && (error.name === 'NoSuchKey' || error.name === 'NotFound');
}
