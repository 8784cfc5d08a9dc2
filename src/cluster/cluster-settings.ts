import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { CodedError } from '../platform/coded-error.ts';
import type { StoreLocation } from './object-store.ts';

/** The cluster's settings do not hold together (one engine without the other, a URL that is not one). */
export class ClusterSettingsError extends CodedError {
  static override readonly errorCode = 'InvalidClusterSettings';
}

/** How a node finds the cluster's engines, and its own part in it. */
export interface ClusterSettings {
  /** PostgreSQL: who owns which machine. */
  database: string;
  /** The S3-compatible bucket: the machines' folders. */
  store: StoreLocation;
  /** How long a node's lease lasts unrenewed: how soon another node takes its machines after it stops. */
  leaseSeconds: number;
  /** Where other nodes reach this one; default the address it listens on. */
  advertiseUrl?: string;
}

export const DEFAULT_LEASE_SECONDS = 15;

/** The settings, as `perennial serve`'s flags, the environment and the settings file give them; each may give any. */
const SettingsSource = z.object({
  database: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'a PostgreSQL URL, postgres://user:password@host:port/database')
    .optional(),
  store: z
    .string()
    .regex(/^s3:\/\//, 'an S3 URL, s3://bucket/prefix')
    .optional(),
  storeEndpoint: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).optional(),
  storeRegion: z.string().min(1).optional(),
  leaseSeconds: z.coerce.number().min(2, 'a lease is at least 2 s').max(600, 'a lease is at most 600 s').optional(),
  advertiseUrl: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).optional(),
});
export type SettingsSource = z.input<typeof SettingsSource>;

/** `perennial serve`'s flags for each setting. */
const FLAGS: Record<keyof SettingsSource, string> = {
  database: '--cluster',
  store: '--store',
  storeEndpoint: '--store-endpoint',
  storeRegion: '--store-region',
  leaseSeconds: '--lease',
  advertiseUrl: '--advertise',
};

/** The environment's names for each setting. */
const ENVIRONMENT: Record<keyof SettingsSource, string> = {
  database: 'PERENNIAL_CLUSTER',
  store: 'PERENNIAL_STORE',
  storeEndpoint: 'PERENNIAL_STORE_ENDPOINT',
  storeRegion: 'PERENNIAL_STORE_REGION',
  leaseSeconds: 'PERENNIAL_LEASE',
  advertiseUrl: 'PERENNIAL_ADVERTISE_URL',
};

/** The settings file's name in the data dir. */
export const SETTINGS_FILE = 'settings.json';

/** The settings file's format: `{"version": 1, "cluster": {...the settings' names...}}`. */
const SETTINGS_VERSION = 1;
const SettingsFile = z.looseObject({ version: z.number().int(), cluster: z.looseObject({}).optional() });

/** The cluster settings in the file at `path` (none when it does not exist). */
export async function readSettingsFile(path: string): Promise<SettingsSource> {
  const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw new ClusterSettingsError(`The settings file ${path} cannot be read: ${error.message}`);
  });
  if (text === null) return {};
  let parsed;
  try {
    parsed = SettingsFile.parse(JSON.parse(text));
  } catch (error) {
    throw new ClusterSettingsError(`The settings file ${path} is not settings: ${(error as Error).message}`);
  }
  if (parsed.version > SETTINGS_VERSION)
    throw new ClusterSettingsError(
      `The settings file ${path} has format ${parsed.version}, and this Perennial reads format ${SETTINGS_VERSION}: update Perennial`,
    );
  return check(parsed.cluster ?? {}, `the settings file ${path}`);
}

/** The settings the environment gives. */
export function environmentSettings(env: NodeJS.ProcessEnv): SettingsSource {
  const given = Object.fromEntries(Object.entries(ENVIRONMENT).flatMap(([key, name]) => (env[name] ? [[key, env[name]]] : [])));
  return check(given, 'the environment', ENVIRONMENT);
}

/** The settings `perennial serve`'s flags give. */
export function flagSettings(flags: SettingsSource): SettingsSource {
  return check(flags, 'the command line', FLAGS);
}

/**
 * The cluster settings, each from the first source that gives it (flags, then the environment,
 * then the file); none when no source names a database or a store: the server runs on its own.
 */
export function clusterSettings(...sources: SettingsSource[]): ClusterSettings | undefined {
  const merged: SettingsSource = {};
  for (const source of [...sources].reverse()) Object.assign(merged, Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined)));
  const settings = check(merged, 'the settings');
  if (!settings.database && !settings.store) return undefined;
  if (!settings.database || !settings.store)
    throw new ClusterSettingsError(
      `A cluster needs both a PostgreSQL database (--cluster, ${ENVIRONMENT.database}) and a bucket (--store, ${ENVIRONMENT.store}); ` +
        `only the ${settings.database ? 'database' : 'bucket'} is given`,
    );
  return {
    database: settings.database,
    store: { url: settings.store, endpoint: settings.storeEndpoint, region: settings.storeRegion },
    leaseSeconds: Number(settings.leaseSeconds ?? DEFAULT_LEASE_SECONDS),
    advertiseUrl: settings.advertiseUrl?.replace(/\/+$/, ''),
  };
}

/** `source` checked, or why not, each setting named as `where` names it. */
function check(source: unknown, where: string, names: Partial<Record<string, string>> = {}): z.output<typeof SettingsSource> {
  const parsed = SettingsSource.safeParse(source);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${names[String(issue.path[0])] ?? issue.path.join('.')}: ${issue.message}`).join('; ');
  throw new ClusterSettingsError(`The cluster settings in ${where} are not valid: ${problems}`);
}
