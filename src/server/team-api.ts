import { TEAM_REQUEST_NAMES, TEAM_REQUESTS, type TeamRequestBody, type TeamRequestName, type TeamRequestResult } from '../shared/team-requests.ts';
import { parseRequest } from '../shared/requests.ts';
import type { HttpRoute } from '../shared/operations.ts';
import type { CallerMachines } from './caller-machines.ts';
import type { Handler } from './forevervm-api.ts';
import { tableRoute } from './table-routes.ts';

type TeamWork = { [K in TeamRequestName]: (request: TeamRequestBody<K>, machines: CallerMachines) => Promise<TeamRequestResult<K>> };

/** What each of the team's requests does, for the caller: `Team` checks that they may. */
const TEAM_WORK: TeamWork = {
  // Every machine there is, on every node of a cluster, becomes the owner's.
  init: async ({ owner }, { team, principal, manager }) =>
    team.init(
      principal,
      owner,
      (await manager.listEverywhere({})).map((m) => m.name),
    ),
  people: (_, { team, principal }) => team.people(principal),
  addPerson: ({ name, admin, subject }, { team, principal }) => team.addPerson(principal, name, { admin, subject }),
  removePerson: async ({ person }, { team, principal }) => {
    await team.removePerson(principal, person);
    return true as const;
  },
  keys: ({ person }, { team, principal }) => team.keys(principal, person),
  createKey: (request, { team, principal }) => team.createKey(principal, request),
  revokeKey: ({ id }, { team, principal }) => team.revokeKey(principal, id),
  share: ({ name, with: target, right }, { team, principal }) => team.share(principal, name, target, right),
  unshare: ({ name, with: target }, { team, principal }) => team.unshare(principal, name, target),
  give: async ({ name, person }, { team, principal }) => {
    await team.give(principal, name, person);
    return true as const;
  },
  audit: (filter, { team, principal }) => team.auditEntries(principal, filter),
  // Not a secret: the protected-resource metadata names it to anyone.
  signIn: (_, { team }) => team.signInSettings(),
  setSignIn: ({ issuer, resource }, { team, principal }) => team.setSignIn(principal, issuer, resource),
  quota: ({ person }, { team, principal }) => team.quota(principal, person),
  setQuota: ({ person, ...quota }, { team, principal }) => team.setQuota(principal, person, quota),
};

/** What the audit log calls the team's changes, and what each concerns; reads are logged only when refused. */
const TEAM_ACTIONS: Partial<Record<TeamRequestName, { action: string; target: (request: Record<string, unknown>) => unknown }>> = {
  init: { action: 'team made', target: (r) => r.owner },
  addPerson: { action: 'person added', target: (r) => r.name },
  removePerson: { action: 'person removed', target: (r) => r.person },
  createKey: { action: 'key made', target: (r) => r.person ?? 'own' },
  revokeKey: { action: 'key revoked', target: (r) => r.id },
  share: { action: 'shared', target: (r) => `${String(r.with)} (${String(r.right)})` },
  unshare: { action: 'unshared', target: (r) => r.with },
  give: { action: 'given', target: (r) => r.person },
  setQuota: { action: 'quota set', target: (r) => r.person ?? 'the default' },
  setSignIn: { action: 'sign-in set', target: (r) => r.issuer ?? 'keys only' },
};

/** The team's routes: people, keys, quotas, the audit log, and a machine's shares and owner. */
export function teamRoutes(): Array<[string, RegExp, Handler]> {
  return TEAM_REQUEST_NAMES.map((name) => {
    const definition = TEAM_REQUESTS[name] as unknown as HttpRoute;
    const work = TEAM_WORK[name] as (request: unknown, machines: CallerMachines) => Promise<unknown>;
    const logged = TEAM_ACTIONS[name];
    return tableRoute(definition, (fields, machines) => {
      const machine = typeof fields.name === 'string' && definition.path.includes('{name}') ? fields.name : undefined;
      const target = logged && String(logged.target(fields));
      return machines.audited(
        logged?.action,
        machine,
        () => work(parseRequest(definition.request, fields), machines),
        () => target,
      );
    });
  });
}
