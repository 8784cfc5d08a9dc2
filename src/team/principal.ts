import type { Scope } from '../shared/team-requests.ts';

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
