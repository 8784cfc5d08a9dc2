import { z } from 'zod';
import { EVERYONE, PersonName, SCOPES } from '../shared/team-requests.ts';

/**
 * What a team is, as one document: its people, their keys (hashes only), whose each machine is
 * and whom it is shared with, and the quotas. A data dir keeps it in `team.json`, a cluster in its
 * database; both write it whole, so that a change is seen whole by every reader.
 */

/** The format this build writes; a higher one is refused before anything is written. */
export const TEAM_FORMAT = 1;

export const Person = z.looseObject({
  name: PersonName,
  /** Runs the team: people, keys, quotas, the audit log. It sees no one's machines for it. */
  admin: z.boolean(),
  createdAt: z.string(),
  /** The subject of this person's sign-in at the team's identity provider (OpenID Connect's `sub`). */
  subject: z.string().optional(),
});
export type Person = z.infer<typeof Person>;

export const Key = z.looseObject({
  id: z.string(),
  name: z.string(),
  person: PersonName,
  scopes: z.array(z.enum(SCOPES)),
  /** SHA-256 of the key's secret, hex: the key itself is shown once and kept nowhere. */
  hash: z.string(),
  createdAt: z.string(),
  /** Who made it: its person, or an admin. */
  createdBy: z.string(),
  expiresAt: z.string().optional(),
  revokedAt: z.string().optional(),
});
export type Key = z.infer<typeof Key>;

export const Share = z.looseObject({ with: z.union([PersonName, z.literal(EVERYONE)]), right: z.enum(['read', 'run']) });
export type Share = z.infer<typeof Share>;

export const MachineAccessRecord = z.looseObject({ owner: PersonName, shares: z.array(Share).default([]) });
export type MachineAccessRecord = z.infer<typeof MachineAccessRecord>;

export const Quota = z.looseObject({
  machines: z.number().int().nonnegative().optional(),
  warmMemoryMb: z.number().int().nonnegative().optional(),
  diskMb: z.number().int().nonnegative().optional(),
});
export type Quota = z.infer<typeof Quota>;

/** Where the team's people sign in (OpenID Connect), for MCP clients that sign them in instead of taking a key. */
export const SignIn = z.looseObject({
  /** The authorization server's issuer URL; its discovery document names its keys. */
  issuer: z.url(),
  /** This server's MCP endpoint as people reach it: the audience its access tokens must name. */
  resource: z.url(),
});
export type SignIn = z.infer<typeof SignIn>;

export const TeamDocument = z.looseObject({
  format: z.literal(TEAM_FORMAT),
  writtenBy: z.string(),
  people: z.array(Person),
  keys: z.array(Key),
  /** Whose each machine is, by name. A machine not named here is the operator's alone. */
  machines: z.record(z.string(), MachineAccessRecord),
  quotas: z.looseObject({ default: Quota, people: z.record(z.string(), Quota).default({}) }),
  signIn: SignIn.optional(),
});
export type TeamDocument = z.infer<typeof TeamDocument>;

/** What every person gets unless an admin says otherwise. */
export const DEFAULT_QUOTA: Required<Quota> = { machines: 20, warmMemoryMb: 4096, diskMb: 10_240 };

export function emptyTeam(writtenBy: string): TeamDocument {
  return { format: TEAM_FORMAT, writtenBy, people: [], keys: [], machines: {}, quotas: { default: { ...DEFAULT_QUOTA }, people: {} } };
}
