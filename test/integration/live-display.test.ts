import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { HttpClient } from '../../src/client/http-client.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import type { DisplayEntry, ReplServerMessage } from '../../src/shared/types.ts';
import { ENGINES_UNDER_TEST, machineOptions, managerFixture, run, tempDataDir, valueOf } from '../helpers/machines.ts';

/** A display entry in a line: what it shows and where, for comparing. */
function described(entry: DisplayEntry): string {
  return 'data' in entry ? `${String(entry.data['text/plain'])} after ${entry.afterOutput}` : `clear after ${entry.afterOutput}`;
}

// The cell displays, then asks: the question is the moment at which what it displayed must have
// arrived, while the cell still runs.
const DISPLAY_THEN_ASK = 'print("before")\ndisplay("shown")\nanswer = input("go? ")\nanswer';

for (const engine of ENGINES_UNDER_TEST)
  describe(`what a running cell displays reaches whoever sent it at once (${engine} engine)`, { timeout: 120_000 }, () => {
    const fixture = managerFixture({}, { empty: engine === 'python' });

    it('comes to onDisplay while the cell runs, after the output printed before it', async () => {
      const name = (await fixture.manager.create(machineOptions(engine))).name;
      const seen: string[] = [];
      const { result, stdout } = await run(fixture.manager, name, DISPLAY_THEN_ASK, {
        onDisplay: (entry) => seen.push(described(entry)),
        onInput: async () => (seen.push('asked'), 'on'),
      });
      assert.equal(valueOf(result), "'on'");
      assert.equal(stdout, 'before\ngo? on');
      assert.deepEqual(seen, ["'shown' after 1", 'asked']);
      assert.deepEqual(result.data?.display?.map(described), ["'shown' after 1"], 'the result has it too');
    });
  });

describe('displays over the WebSocket REPL', { timeout: 120_000 }, () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let server: LocalServer;
  before(async () => {
    ({ dir, cleanup } = await tempDataDir({ empty: true }));
    server = await LocalServer.start({ dataDir: dir, defaultEngine: 'python' });
  });
  after(async () => {
    await server.close();
    await cleanup();
  });

  /** Sends one exec the moment the socket opens, as the official SDK does, and collects every message until its result. */
  const exec = (extensions: Record<string, boolean>) =>
    new Promise<ReplServerMessage[]>((resolve, reject) => {
      const socket = new WebSocket(`${server.url.replace('http', 'ws')}/v1/machine/new/repl`, { headers: { authorization: `Bearer ${server.token}` } });
      const messages: ReplServerMessage[] = [];
      socket.on('open', () =>
        socket.send(JSON.stringify({ type: 'exec', instruction: { code: 'print("a")\ndisplay("b")\n"c"' }, request_id: 0, ...extensions })),
      );
      socket.on('message', (data) => {
        const message = JSON.parse(data.toString()) as ReplServerMessage;
        messages.push(message);
        if (message.type === 'result') socket.close();
      });
      socket.on('close', () => resolve(messages));
      socket.on('error', reject);
    });

  it('sends display messages, in their place among the output, only to a client that asked for them', async () => {
    const asked = await exec({ displays: true });
    assert.deepEqual(
      asked.map((m) => (m.type === 'display' ? `display ${described(m.entry)}` : m.type)),
      ['connected', 'exec_received', 'output', "display 'b' after 1", 'result'],
    );
    const plain = await exec({});
    assert.deepEqual(
      plain.map((m) => m.type),
      ['connected', 'exec_received', 'output', 'result'],
      'a ForeverVM client gets the protocol it knows',
    );
  });

  it("reaches a client's onDisplay before the cell ends", async () => {
    const client = new HttpClient({ baseUrl: server.url, token: server.token });
    try {
      const machine = (await client.create({ engine: 'python' })).name;
      const seen: string[] = [];
      const { result } = await client.run(machine, DISPLAY_THEN_ASK, {
        onDisplay: (entry) => seen.push(described(entry)),
        onInput: async () => (seen.push('asked'), 'yes'),
      });
      assert.equal(valueOf(result), "'yes'");
      assert.deepEqual(seen, ["'shown' after 1", 'asked']);
    } finally {
      await client.close();
    }
  });
});
