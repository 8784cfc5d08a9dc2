// A server for a team, on one node: two people and an admin, each with their own key. Every route
// the other person tries on the first person's machine, by name or by a guessed name, is answered
// as for a machine that does not exist and changes nothing; shares give read or run and end when
// ended; a revoked key is refused; a quota's refusal names the quota and the usage; MCP over HTTP
// shows each person their own machines only; the official ForeverVM SDK's tests pass with a person's key.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import WebSocket from 'ws';
import { HttpClient } from '../../src/client/http-client.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import { OPERATION_NAMES, OPERATIONS } from '../../src/shared/operations.ts';
import { ForeverVMError } from '../../src/shared/forevervm-error.ts';
import { readKey } from '../../src/team/keys.ts';
import { TEAM_FILE } from '../../src/team/team-store.ts';
import { eventually, outcome, tempDataDir, TEST_PYTHON, valueOf } from '../helpers/machines.ts';
import { call, streamableTransport, textOf } from '../helpers/mcp-clients.ts';
import { finished } from '../helpers/processes.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The official ForeverVM TypeScript SDK, its sources and in-source tests as published (test/vendor/README.md). */
const SDK = join(ROOT, 'test/vendor/forevervm-sdk');

/** A raw request with `token`, as any HTTP client sends it: its status and body. */
async function raw(url: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.text() };
}

describe("a team's server on one node", { timeout: 300_000 }, () => {
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  let server: LocalServer;
  let operator: HttpClient;
  let alice: HttpClient;
  let bob: HttpClient;
  let bobKey: string;
  let aliceMachine: string;
  const clients = (token: string) => new HttpClient({ baseUrl: server.url, token });

  before(async () => {
    data = await tempDataDir();
    process.env.PERENNIAL_PYTHON = TEST_PYTHON;
    server = await LocalServer.start({ dataDir: data.dir, defaultEngine: 'sandbox' });
    operator = clients(server.token);
    // A machine of the server's one user before it was a team's: it goes to the owner named.
    await operator.create({ name: 'before-teams', engine: 'python' });
    const init = await operator.team('init', { owner: 'alice' });
    alice = clients(init.key);
    await alice.team('addPerson', { name: 'bob' });
    bobKey = (await alice.team('createKey', { person: 'bob', name: 'laptop', scopes: ['read', 'run', 'manage'] })).key;
    bob = clients(bobKey);
    aliceMachine = (await alice.create({ name: 'alices' })).name;
    await alice.run(aliceMachine, 'secret = 42');
  });
  after(async () => {
    for (const client of [operator, alice, bob]) await client?.close();
    await server?.close();
    delete process.env.PERENNIAL_PYTHON;
    await data?.cleanup();
  });

  it('names each person, and keeps keys only as hashes', async () => {
    assert.deepEqual(await bob.whoami(), { account: 'bob', person: 'bob', scopes: ['read', 'run', 'manage'] });
    assert.equal((await alice.whoami()).account, 'alice');
    const file = await readFile(join(data.dir, TEAM_FILE), 'utf8');
    // The whole secret, which may hold '_' itself.
    assert.ok(!file.includes(readKey(bobKey)!.secret), "the key's secret is not in team.json");
    const keys = await alice.team('keys', { person: 'bob' });
    assert.deepEqual(
      keys.map((k) => [k.name, k.state]),
      [['laptop', 'active']],
    );
    assert.ok(!('hash' in keys[0]!));
  });

  it("gives the machines made before the team to its owner, and lists each person's own", async () => {
    assert.deepEqual((await alice.list()).map((m) => m.name).sort(), ['alices', 'before-teams']);
    assert.deepEqual(await bob.list(), []);
    assert.equal((await alice.get('alices')).access?.owner, 'alice');
  });

  it("answers every route on another person's machine as for one that does not exist, and changes nothing", async () => {
    const nowhere = 'no-such-machine';
    const expected = await outcome(() => bob.get(nowhere));
    assert.equal(expected, 'MachineNotFound');
    for (const target of [aliceMachine, 'before-teams', nowhere]) {
      for (const op of OPERATION_NAMES) {
        if (op === 'list') continue;
        const request = {
          name: target,
          variable: 'secret',
          path: 'x.txt',
          content: 'x',
          checkpoint: 'latest',
          code: 'secret',
          expression: 'secret',
          cursor: 0,
          packages: ['six'],
          message: {},
          tags: {},
        };
        const fields = Object.fromEntries(Object.keys(OPERATIONS[op].request.shape).map((key) => [key, request[key as keyof typeof request]]));
        const answer = await raw(
          server.url,
          bobKey,
          OPERATIONS[op].method,
          OPERATIONS[op].path.replace('{name}', target).replace(/\{(\w+)\}/g, 'x'),
          OPERATIONS[op].method === 'GET' || OPERATIONS[op].method === 'DELETE' ? undefined : fields,
        );
        assert.equal(answer.status, 404, `${op} on ${target}: ${answer.body}`);
        assert.ok(!/secret = 42|"owner"|42/.test(answer.body), `${op} tells nothing of the machine: ${answer.body}`);
        // The same words whether the machine exists or not.
        if (JSON.parse(answer.body).code === 'MachineNotFound')
          assert.match(answer.body, new RegExp(`Machine ${target} does not exist \\(it may have been deleted\\)"`));
      }
      assert.equal(await outcome(() => bob.start(target, 'secret = 0')), 'MachineNotFound', `exec on ${target}`);
      assert.equal(await outcome(() => bob.result(target, 0)), 'MachineNotFound', `result on ${target}`);
      for (const path of [`/v1/machine/${target}/exec/0/stream-result`, `/v1/machine/${target}/shares`]) {
        const answer = await raw(
          server.url,
          bobKey,
          path.endsWith('shares') ? 'POST' : 'GET',
          path,
          path.endsWith('shares') ? { with: 'bob', right: 'run' } : undefined,
        );
        assert.equal(answer.status, 404, `${path}: ${answer.body}`);
      }
    }
    // Over ForeverVM's WebSocket REPL too: an error frame, and the socket closed.
    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/machine/${aliceMachine}/repl?_forevervm_jwt=${bobKey}`);
    const frames: string[] = [];
    socket.on('message', (frame) => frames.push(frame.toString()));
    socket.on('open', () => socket.send(JSON.stringify({ type: 'exec', instruction: { code: 'secret = 0' }, request_id: 1 })));
    await new Promise((resolve) => socket.once('close', resolve));
    assert.match(frames.join('\n'), /"code":"MachineNotFound"/);
    // Nothing changed: alice's machine still holds her value, and nothing ran.
    assert.equal((await alice.variable(aliceMachine, 'secret')).repr, '42');
    assert.ok((await alice.history(aliceMachine)).every((entry) => !entry.code.includes('secret = 0')));
  });

  it('shares a machine to read, then to run, and no longer once unshared', async () => {
    await alice.team('share', { name: aliceMachine, with: 'bob', right: 'read' });
    assert.equal((await bob.variable(aliceMachine, 'secret')).repr, '42');
    assert.deepEqual(
      (await bob.list()).map((m) => [m.name, m.access?.right, m.access?.owner]),
      [[aliceMachine, 'read', 'alice']],
    );
    assert.equal(await outcome(() => bob.run(aliceMachine, 'secret + 1')), 'NotShared');
    await alice.team('share', { name: aliceMachine, with: 'bob', right: 'run' });
    assert.equal(valueOf((await bob.run(aliceMachine, 'secret + 1')).result), '43');
    assert.equal(await outcome(() => bob.delete(aliceMachine)), 'NotShared', 'a share to run does not let them delete it');
    assert.equal(await outcome(() => bob.team('share', { name: aliceMachine, with: 'bob', right: 'run' })), 'NotShared');
    await alice.team('unshare', { name: aliceMachine, with: 'bob' });
    assert.equal(await outcome(() => bob.get(aliceMachine)), 'MachineNotFound');
    assert.deepEqual(await bob.list(), []);
  });

  it('shows each person the events of their own machines only', async () => {
    const seen: string[] = [];
    const stop = new AbortController();
    const stream = bob.events((event) => seen.push(`${event.type} ${event.type === 'created' ? event.machine.name : event.name}`), stop.signal);
    const own = (await bob.create({ name: 'bobs' })).name;
    await alice.run(aliceMachine, 'secret = 42');
    await bob.run(own, '1');
    // Events come in order: once bob's instruction's has come, alice's, before it, would have.
    await eventually(() => seen.includes(`instruction ${own}`), 60_000, "bob's instruction's event");
    stop.abort();
    await stream.catch(() => {});
    assert.ok(seen.includes(`created ${own}`));
    assert.ok(!seen.some((entry) => entry.endsWith(` ${aliceMachine}`)), `bob saw ${seen.join(', ')}`);
    await bob.delete(own);
  });

  it("makes sandbox machines only for people, without the host's folders", async () => {
    assert.equal(await outcome(() => bob.create({ engine: 'python' })), 'EngineNotAllowed');
    assert.equal(await outcome(() => bob.create({ workdir: data.dir })), 'HostFolderNotAllowed');
  });

  it('refuses a request over quota, naming the quota and the usage; what runs is untouched', async () => {
    await alice.team('setQuota', { person: 'bob', machines: 1 });
    const first = (await bob.create()).name;
    await bob.run(first, 'kept = "yes"');
    const refused = await bob.create().catch((error: ForeverVMError) => error);
    assert.ok(refused instanceof ForeverVMError);
    assert.equal(refused.code, 'QuotaExceeded');
    assert.match(refused.message, /bob owns 1 machines of a quota of 1/);
    assert.equal((await bob.variable(first, 'kept')).repr, "'yes'");
    assert.equal(await outcome(() => bob.fork(first)), 'QuotaExceeded');
    await bob.delete(first);
  });

  it('keeps a person to the rights of their key: no key with more, no admin work', async () => {
    const readOnly = clients((await bob.team('createKey', { name: 'read only', scopes: ['read'] })).key);
    assert.equal(await outcome(() => readOnly.create()), 'MissingScope');
    assert.equal(await outcome(() => readOnly.team('createKey', { name: 'more', scopes: ['read', 'run'] })), 'MissingScope');
    assert.equal(await outcome(() => bob.team('createKey', { name: 'admin', scopes: ['admin'] })), 'MissingScope');
    assert.equal(await outcome(() => bob.team('addPerson', { name: 'carol' })), 'MissingScope');
    assert.equal(await outcome(() => bob.team('keys', { person: 'alice' })), 'MissingScope');
    assert.ok(
      (await bob.team('keys', {})).every((key) => key.person === 'bob'),
      'a person lists their own keys',
    );
    assert.equal((await raw(server.url, bobKey, 'POST', '/v1/server/stop', {})).status, 403);
    await readOnly.close();
  });

  it("works with a person's key as the ForeverVM SDK uses a token: a new machine's REPL taking an exec sent on open, a reconnect by name, exec and result, the NDJSON stream", async () => {
    const frames: Array<Record<string, unknown>> = [];
    const repl = (machine: string) => {
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/machine/${machine}/repl`, { headers: { authorization: `Bearer ${bobKey}` } });
      socket.on('message', (frame) => frames.push(JSON.parse(frame.toString()) as Record<string, unknown>));
      return socket;
    };
    const first = repl('new');
    // As the SDK does: the first exec goes out the moment the socket opens, before `connected`.
    first.on('open', () => first.send(JSON.stringify({ type: 'exec', instruction: { code: 'n = 6 * 7' }, request_id: 0 })));
    await eventually(() => frames.some((f) => f.type === 'result'), 60_000, 'the first result');
    const name = String(frames.find((f) => f.type === 'connected')?.machine_name);
    first.close();
    const again = repl(name);
    again.on('open', () => again.send(JSON.stringify({ type: 'exec', instruction: { code: 'n' }, request_id: 1 })));
    await eventually(() => frames.filter((f) => f.type === 'result').length === 2, 60_000, 'the result after reconnecting');
    again.close();
    assert.deepEqual((frames.filter((f) => f.type === 'result')[1]!.result as { value: string }).value, '42');
    const posted = await raw(server.url, bobKey, 'POST', `/v1/machine/${name}/exec`, { instruction: { code: 'print("hi")\n1 / 0' } });
    const seq = (JSON.parse(posted.body) as { instruction_seq: number }).instruction_seq;
    const result = JSON.parse((await raw(server.url, bobKey, 'GET', `/v1/machine/${name}/exec/${seq}/result`)).body) as {
      result: { error?: string; value?: string };
    };
    assert.match(result.result.error ?? '', /ZeroDivisionError/);
    assert.equal(result.result.value, undefined);
    const stream = (await raw(server.url, bobKey, 'GET', `/v1/machine/${name}/exec/${seq}/stream-result`)).body
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; chunk?: { data: string; seq: number } });
    assert.deepEqual(stream[0], { type: 'output', chunk: { data: 'hi', stream: 'stdout', seq: 0 }, instruction_id: seq });
    assert.equal(stream.at(-1)!.type, 'result');
    await bob.delete(name);
  });

  it("passes the official ForeverVM SDK's own tests (TypeScript SDK 0.1.35, vendored) with a person's key", async () => {
    await alice.team('addPerson', { name: 'sdk' });
    // Its tests make a machine each; the default quota of machines is not what they try.
    await alice.team('setQuota', { person: 'sdk', machines: 100, warmMemoryMb: 1_000_000 });
    const key = (await alice.team('createKey', { person: 'sdk', name: 'sdk tests', scopes: ['read', 'run', 'manage'] })).key;
    const report = join(data.dir, 'sdk-report.json');
    const child = spawn(
      process.execPath,
      [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--root', SDK, '--reporter=json', `--outputFile=${report}`, '--testTimeout=60000'],
      { cwd: SDK, env: { ...process.env, FOREVERVM_API_BASE: server.url, FOREVERVM_TOKEN: key, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const ran = await finished(child);
    const results = JSON.parse(await readFile(report, 'utf8')) as {
      numTotalTests: number;
      testResults: Array<{ assertionResults: Array<{ fullName: string; status: string; failureMessages: string[] }> }>;
    };
    const tests = results.testResults.flatMap((file) => file.assertionResults);
    const failed = tests.filter((test) => test.status !== 'passed');
    assert.deepEqual(
      failed.map((test) => `${test.fullName}: ${test.failureMessages.join('\n')}`),
      [],
    );
    // Every test of both files ran (whoami, machines, exec, streams, tags, the REPL's five).
    assert.equal(tests.length, 13, ran.stdout + ran.stderr);
    assert.equal(ran.code, 0, ran.stderr);
    // The machines it made are the SDK person's: no one else sees them.
    const sdk = clients(key);
    const made = (await sdk.list()).map((machine) => machine.name);
    await sdk.close();
    assert.ok(made.length >= 10, made.join(', '));
    assert.deepEqual(
      (await bob.list()).filter((machine) => made.includes(machine.name)),
      [],
    );
  });

  it('shows each MCP client its own machines only', async () => {
    const mcp = new Client({ name: 'team-test', version: '1' });
    await mcp.connect(streamableTransport({ url: server.url, token: bobKey }));
    const listed = textOf(await call(mcp, 'list-python-repls', {}));
    assert.ok(!listed.includes(aliceMachine), listed);
    const refused = await call(mcp, 'list-repl-variables', { replId: aliceMachine });
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /does not exist/);
    await mcp.close();
    // Another key of the same person gets its own scopes over MCP, not those of the key before it.
    const readOnly = new Client({ name: 'team-test', version: '1' });
    await readOnly.connect(streamableTransport({ url: server.url, token: (await bob.team('createKey', { name: 'mcp read', scopes: ['read'] })).key }));
    const made = await call(readOnly, 'create-python-repl', {});
    assert.equal(made.isError, true);
    assert.match(textOf(made), /needs the manage scope/);
    await readOnly.close();
  });

  it('refuses a revoked key at once, and a removed person', async () => {
    const spare = await bob.team('createKey', { name: 'spare', scopes: ['read'] });
    const spareClient = clients(spare.key);
    assert.equal((await spareClient.whoami()).account, 'bob');
    await bob.team('revokeKey', { id: spare.keyInfo.id });
    assert.equal(await outcome(() => spareClient.whoami()), 'Unauthorized');
    await spareClient.close();
    await alice.team('addPerson', { name: 'carol' });
    const carol = clients((await alice.team('createKey', { person: 'carol', name: 'desk', scopes: ['read'] })).key);
    assert.equal((await carol.whoami()).account, 'carol');
    await alice.team('removePerson', { person: 'carol' });
    assert.equal(await outcome(() => carol.whoami()), 'Unauthorized');
    await carol.close();
  });

  it('keeps an audit log of each of these, for admins, with no code or output in it', async () => {
    assert.equal(await outcome(() => bob.team('audit', {})), 'MissingScope');
    const entries = await alice.team('audit', {});
    const has = (match: Partial<(typeof entries)[number]>) =>
      assert.ok(
        entries.some((entry) => Object.entries(match).every(([key, value]) => entry[key as keyof typeof entry] === value)),
        `no entry ${JSON.stringify(match)} in:\n${entries.map((e) => JSON.stringify(e)).join('\n')}`,
      );
    has({ who: 'the operator', action: 'team made', target: 'alice', outcome: 'done' });
    has({ who: 'alice', action: 'made', target: aliceMachine, outcome: 'done' });
    has({ who: 'alice', action: 'ran', machine: aliceMachine, outcome: 'done' });
    has({ who: 'alice', action: 'shared', machine: aliceMachine, target: 'bob (read)' });
    has({ who: 'alice', action: 'unshared', machine: aliceMachine, target: 'bob' });
    has({ who: 'bob', machine: aliceMachine, outcome: 'refused', code: 'MachineNotFound' });
    has({ who: 'bob', action: 'ran', machine: aliceMachine, outcome: 'done' });
    has({ who: 'bob', action: 'made', outcome: 'refused', code: 'QuotaExceeded' });
    has({ who: 'bob', action: 'key revoked', outcome: 'done' });
    has({ who: 'unknown', action: 'signed in', outcome: 'refused' });
    has({ who: 'alice', action: 'person removed', target: 'carol' });
    assert.ok(
      entries.every((entry) => entry.from && /^(\S+ (http|websocket)|mcp)$/.test(entry.from)),
      `each says where from`,
    );
    const text = await readFile(join(data.dir, 'audit.jsonl'), 'utf8');
    assert.ok(!/secret|prn_|42/.test(text.replace(/"at":"[^"]*"/g, '')), `no code, output or key in the log:\n${text}`);
    const bobs = await alice.team('audit', { person: 'bob', action: 'ran' });
    assert.ok(bobs.length > 0 && bobs.every((entry) => entry.who === 'bob' && entry.action === 'ran'));
  });

  it('keeps the team across a restart', async () => {
    const dataDir = server.manager.dataDir;
    await server.close();
    server = await LocalServer.start({ dataDir, defaultEngine: 'sandbox' });
    const again = clients(bobKey);
    assert.equal((await again.whoami()).account, 'bob');
    assert.equal(await outcome(() => again.get(aliceMachine)), 'MachineNotFound');
    await again.close();
  });
});
