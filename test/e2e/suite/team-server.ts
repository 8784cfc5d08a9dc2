/**
 * A team's server for the suite: a Perennial server of its own made a team's, with alice as its
 * admin and bob as a person with a key. The test signs VS Code in. (Plain HTTP: the suite is
 * bundled as CommonJS, where the client's modules do not load.)
 */
import type { Changes } from './changes.ts';
import { standInServer } from './hosted.ts';

/** One person's calls to the server's HTTP API, each answered with its JSON or thrown with its status. */
export type TeamCall = <T>(method: string, path: string, body?: object) => Promise<T>;

export interface TeamStandIn {
  url: string;
  alice: TeamCall;
  bob: TeamCall;
  bobsKey: string;
}

export async function teamStandIn(changes: Changes): Promise<TeamStandIn> {
  const { url, token } = await standInServer(changes, 'team');
  const as =
    (key: string): TeamCall =>
    async <T>(method: string, path: string, body?: object) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
      return JSON.parse(text) as T;
    };
  const alice = as((await as(token)<{ key: string }>('POST', '/v1/team/init', { owner: 'alice' })).key);
  await alice('POST', '/v1/team/people', { name: 'bob' });
  const bobsKey = (await alice<{ key: string }>('POST', '/v1/team/keys', { person: 'bob', name: 'vscode', scopes: ['read', 'run', 'manage'] })).key;
  return { url, alice, bob: as(bobsKey), bobsKey };
}
