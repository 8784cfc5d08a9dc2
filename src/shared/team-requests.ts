import { z } from 'zod';
import type { HttpRoute } from './operations.ts';
import { MachineName } from './requests.ts';

/**
 * The team's requests, as they cross HTTP (`/v1/team/...`, and a machine's shares and owner): one
 * schema each, read by the server's routes (`server/team-api.ts`) and the CLI's client. Only a
 * team's server answers them (but `init`, which makes one).
 */

/** What a key may do: see machines, run code on them, make, change and remove them, run the team. */
export const SCOPES = ['read', 'run', 'manage', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** A share's target: everyone in the team. */
export const EVERYONE = '*';

export const PersonName = z
  .string()
  .regex(/^[a-z][a-z0-9._-]{0,63}$/, 'a person is named by 1 to 64 lower-case letters, digits, ".", "_" or "-", starting with a letter');

/** Whom a machine is shared with, in words: "bob (read), everyone (run)"; empty when with no one. */
export function describeShares(shares: ReadonlyArray<{ with: string; right: string }>): string {
  return shares.map((s) => `${s.with === EVERYONE ? 'everyone' : s.with} (${s.right})`).join(', ');
}

const ShareTarget = z.union([PersonName, z.literal(EVERYONE)]);
const QuotaFields = {
  machines: z.coerce.number().int().nonnegative().optional(),
  warmMemoryMb: z.coerce.number().int().nonnegative().optional(),
  diskMb: z.coerce.number().int().nonnegative().optional(),
};

/** A person as the team's API shows them. */
export interface TeamPerson {
  name: string;
  admin: boolean;
  createdAt: string;
  subject?: string;
}

/** A key as its person and admins see it: never its secret. */
export interface TeamKey {
  id: string;
  name: string;
  person: string;
  scopes: Scope[];
  createdAt: string;
  createdBy: string;
  expiresAt?: string;
  revokedAt?: string;
  state: 'active' | 'expired' | 'revoked';
}

/** A key just made: the whole key, shown this once. */
export interface MadeTeamKey {
  key: string;
  keyInfo: TeamKey;
}

export interface TeamQuota {
  machines: number;
  warmMemoryMb: number;
  diskMb: number;
}

/**
 * An entry of a team's audit log: who did what to which machine, from where, and how it ended. It
 * names machines, people and keys, never code, output or a key's secret.
 */
export interface AuditEntry {
  at: string;
  /** A person, `the operator`, or `unknown` (a credential no one holds). */
  who: string;
  /** The key (`key <id>`) or sign-in the request came with. */
  credential?: string;
  /** What was asked: `made`, `ran`, `read`, `shared`, `deleted`, `key made`, ... */
  action: string;
  machine?: string;
  /** What else it concerned: a person, a key's id, a share's target, a fork. */
  target?: string;
  /** Where the request came from: its address and how (`http`, `websocket`, `mcp`). */
  from?: string;
  outcome: 'done' | 'refused' | 'failed';
  /** For a refusal or a failure: its error's code. */
  code?: string;
}

const AuditQuery = z.object({
  person: z.string().max(64).optional(),
  machine: MachineName.optional(),
  action: z.string().max(64).optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  limit: z.coerce.number().int().min(1).max(100_000).optional(),
});
/** Where people sign in for MCP clients: the identity provider's issuer, and this server's MCP endpoint (the tokens' audience); null: with keys only. */
export interface TeamSignIn {
  issuer: string | null;
  resource: string | null;
}

/** How the scopes of a sign-in's access token are named: `perennial:read` and so on. */
export const SIGN_IN_SCOPE_PREFIX = 'perennial:';

/** Which entries of the audit log to read: the newest `limit` (default 1000) of those that match. */
export type AuditFilter = z.infer<typeof AuditQuery>;

export interface TeamRequest<Request extends z.ZodObject, Result> extends HttpRoute<Request> {
  /** The result's type; never set. */
  readonly result?: Result;
}

function request<Result>() {
  return <Request extends z.ZodObject>(definition: Omit<TeamRequest<Request, Result>, 'result'>): TeamRequest<Request, Result> => definition;
}

export const TEAM_REQUESTS = {
  /** Makes this server a team's: `owner` is its first admin, and owns the machines here now. The operator's alone. */
  init: request<MadeTeamKey>()({ method: 'POST', path: '/v1/team/init', request: z.object({ owner: PersonName }), what: 'serve a team' }),
  people: request<TeamPerson[]>()({ method: 'GET', path: '/v1/team/people', request: z.object({}), field: 'people', what: 'list people' }),
  addPerson: request<TeamPerson>()({
    method: 'POST',
    path: '/v1/team/people',
    request: z.object({ name: PersonName, admin: z.boolean().optional(), subject: z.string().min(1).max(255).optional() }),
    what: 'add people',
  }),
  removePerson: request<true>()({
    method: 'DELETE',
    path: '/v1/team/people/{person}',
    request: z.object({ person: PersonName }),
    field: 'removed',
    what: 'remove people',
  }),
  keys: request<TeamKey[]>()({ method: 'GET', path: '/v1/team/keys', request: z.object({ person: PersonName.optional() }), field: 'keys', what: 'list keys' }),
  createKey: request<MadeTeamKey>()({
    method: 'POST',
    path: '/v1/team/keys',
    request: z.object({
      person: PersonName.optional(),
      name: z.string().min(1).max(100),
      scopes: z.array(z.enum(SCOPES)).min(1),
      expiresAt: z.iso.datetime({ offset: true }).optional(),
    }),
    what: 'make keys',
  }),
  revokeKey: request<TeamKey>()({ method: 'DELETE', path: '/v1/team/keys/{id}', request: z.object({ id: z.string().min(1).max(64) }), what: 'revoke keys' }),
  share: request<Array<{ with: string; right: 'read' | 'run' }>>()({
    method: 'POST',
    path: '/v1/machine/{name}/shares',
    request: z.object({ name: MachineName, with: ShareTarget, right: z.enum(['read', 'run']) }),
    field: 'shares',
    what: 'share machines',
  }),
  unshare: request<Array<{ with: string; right: 'read' | 'run' }>>()({
    method: 'DELETE',
    path: '/v1/machine/{name}/shares/{with}',
    request: z.object({ name: MachineName, with: ShareTarget }),
    field: 'shares',
    what: 'share machines',
  }),
  give: request<true>()({
    method: 'POST',
    path: '/v1/machine/{name}/owner',
    request: z.object({ name: MachineName, person: PersonName }),
    field: 'given',
    what: 'give machines',
  }),
  audit: request<AuditEntry[]>()({ method: 'GET', path: '/v1/team/audit', request: AuditQuery, field: 'entries', what: 'read the audit log' }),
  signIn: request<TeamSignIn>()({ method: 'GET', path: '/v1/team/sign-in', request: z.object({}), field: 'signIn', what: 'read how people sign in' }),
  setSignIn: request<TeamSignIn>()({
    method: 'PUT',
    path: '/v1/team/sign-in',
    // null: people sign in with keys only.
    request: z.object({ issuer: z.url({ protocol: /^https?$/ }).nullable(), resource: z.url({ protocol: /^https?$/ }).optional() }),
    field: 'signIn',
    what: 'set how people sign in',
  }),
  quota: request<TeamQuota>()({ method: 'GET', path: '/v1/team/quotas', request: z.object({ person: PersonName.optional() }), what: 'read quotas' }),
  setQuota: request<TeamQuota>()({
    method: 'PUT',
    path: '/v1/team/quotas',
    request: z.object({ person: PersonName.optional(), ...QuotaFields }),
    what: 'set quotas',
  }),
};

type TeamRequests = typeof TEAM_REQUESTS;
export type TeamRequestName = keyof TeamRequests;
export type TeamRequestInput<K extends TeamRequestName> = z.input<TeamRequests[K]['request']>;
export type TeamRequestBody<K extends TeamRequestName> = z.output<TeamRequests[K]['request']>;
export type TeamRequestResult<K extends TeamRequestName> = NonNullable<TeamRequests[K]['result']>;
export const TEAM_REQUEST_NAMES = Object.keys(TEAM_REQUESTS) as TeamRequestName[];
