import { z } from 'zod';
import { SCOPES, type Scope } from '../shared/team-requests.ts';

/**
 * Who a request is from. The operator is whoever holds the server's own token (the one in its data
 * dir, which every node of a cluster shares): on a server for one person that is everybody who
 * gets in; on a team's server, the people who run the computer, who can read the data dir anyway.
 */
export type Principal =
  | { kind: 'operator' }
  | {
      kind: 'person';
      person: string;
      /** What the key or sign-in lets this request do (a person's admin flag gives `admin` too). */
      scopes: ReadonlySet<Scope>;
      /** The key presented, or the sign-in's token id: what the audit log names. */
      credential: string;
    };

export const OPERATOR: Principal = { kind: 'operator' };

/** How the audit log and messages name a principal. */
export function nameOf(principal: Principal): string {
  return principal.kind === 'operator' ? 'the operator' : principal.person;
}

export function hasScope(principal: Principal, scope: Scope): boolean {
  return principal.kind === 'operator' || principal.scopes.has(scope);
}

/**
 * A cluster's node calling another for a person (its MCP reaching a machine there): the request
 * carries the cluster's token and, in this header, the person, the scopes and the credential they
 * presented where they came in. Only the operator's token may carry it.
 */
export const ON_BEHALF_HEADER = 'perennial-on-behalf-of';

const OnBehalf = z.object({ person: z.string(), scopes: z.array(z.enum(SCOPES)), credential: z.string() });

/** The header's value for `principal`; none for the operator. */
export function onBehalfOf(principal: Principal): Record<string, string> {
  if (principal.kind === 'operator') return {};
  return { [ON_BEHALF_HEADER]: JSON.stringify({ person: principal.person, scopes: [...principal.scopes], credential: principal.credential }) };
}

/** The person a header names, or undefined when it names none a node would send. */
export function readOnBehalf(value: string): z.infer<typeof OnBehalf> | undefined {
  try {
    const parsed = OnBehalf.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
