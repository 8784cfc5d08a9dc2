/**
 * What a team's checks cost a request: the `1+1` round trip through HTTP exec+result on a team's
 * server with the server's own token (its operator's, which no person's rights limit), with the
 * machine's owner's key, and with another person's key that a share lets run it (each request looks the key up by its hash and checks
 * the machine's owner or share). The three take turns, in rounds, so that drift in the
 * machine's speed falls on each alike.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForeverVMClient } from '../src/client/forevervm-client.ts';
import { HttpClient } from '../src/client/http-client.ts';
import { LocalServer } from '../src/server/local-server.ts';
import { median, ms, percentile, row } from './stats.ts';

const PYTHON = process.env.PERENNIAL_PYTHON ?? '/usr/bin/python3';
const ROUNDS = 10;
const PER_ROUND = 200;
const WARM_UP = 100;

/** `count` round trips of `1+1` on machine `name` with `client`, added to `times`. */
async function roundTrips(client: ForeverVMClient, name: string, count: number, times?: number[]): Promise<void> {
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await client.result(name, (await client.exec(name, '1+1')).instruction_seq);
    times?.push(performance.now() - t);
  }
}

export async function benchTeam(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'perennial-bench-team-'));
  process.env.PERENNIAL_PYTHON = PYTHON;
  const server = await LocalServer.start({ dataDir, defaultEngine: 'python', saveDelayMs: 600_000 });
  const operator = new HttpClient({ baseUrl: server.url, token: server.token });
  try {
    console.log("\na team's checks on each request (python engine machine, HTTP exec + result)");
    const { name } = await operator.create({});
    const alice = new HttpClient({ baseUrl: server.url, token: (await operator.team('init', { owner: 'alice' })).key });
    await alice.team('addPerson', { name: 'bob' });
    const bobsKey = (await alice.team('createKey', { person: 'bob', name: 'bench', scopes: ['read', 'run'] })).key;
    await alice.team('share', { name, with: 'bob', right: 'run' });
    const aliceKey = (await alice.team('createKey', { name: 'bench', scopes: ['read', 'run'] })).key;
    await alice.close();
    const callers = [server.token, aliceKey, bobsKey].map((token) => ({ client: new ForeverVMClient({ baseUrl: server.url, token }), times: [] as number[] }));
    for (const { client } of callers) await roundTrips(client, name, WARM_UP);
    for (let round = 0; round < ROUNDS; round++) for (const { client, times } of callers) await roundTrips(client, name, PER_ROUND, times);
    const [operatorTimes, owner, shared] = callers.map(({ times }) => times) as [number[], number[], number[]];
    row('', 'p50', 'p95', 'over the token');
    const line = (label: string, times: number[]) => row(label, ms(median(times)), ms(percentile(times, 95)), ms(median(times) - median(operatorTimes)));
    line("the server's token (its operator's)", operatorTimes);
    line("the machine's owner's key", owner);
    line("another person's key, shared to run", shared);
  } finally {
    await operator.close();
    await server.close();
    delete process.env.PERENNIAL_PYTHON;
    await rm(dataDir, { recursive: true, force: true });
  }
}
