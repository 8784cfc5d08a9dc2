import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { HttpClient } from '../../src/client/http-client.ts';
import { NOBODY_TO_ASK } from '../../src/engines/engine.ts';
import { LocalServer } from '../../src/server/local-server.ts';
import type { InputRequest } from '../../src/shared/types.ts';
import { ENGINES_UNDER_TEST, errorOf, machineOptions, managerFixture, run, tempDataDir, valueOf } from '../helpers/machines.ts';

for (const engine of ENGINES_UNDER_TEST)
  describe(`input() and getpass() ask whoever sent the cell (${engine} engine)`, { timeout: 120_000 }, () => {
    const fixture = managerFixture({}, { empty: engine === 'python' });
    let name: string;

    before(async () => {
      name = (await fixture.manager.create(machineOptions(engine))).name;
    });

    it('gives the answer to the cell, and keeps the question and answer in the output; a password is not shown', async () => {
      const asked: InputRequest[] = [];
      const answers = ['Ada', 's3cret'];
      const { result, stdout } = await run(
        fixture.manager,
        name,
        'print("before")\nwho = input("Name? ")\nimport getpass\npw = getpass.getpass()\n(who, len(pw))',
        {
          onInput: async (request) => {
            asked.push(request);
            return answers.shift()!;
          },
        },
      );
      assert.equal(valueOf(result), "('Ada', 6)");
      assert.deepEqual(asked, [
        { prompt: 'Name? ', password: false },
        { prompt: 'Password: ', password: true },
      ]);
      assert.equal(stdout, 'before\nName? Ada\nPassword: ');
    });

    it('raises EOFError with the reason when nobody can answer, or the answer is refused', async () => {
      assert.equal(lastLine(errorOf((await run(fixture.manager, name, 'input("Name? ")')).result)), `EOFError: input() has no answer: ${NOBODY_TO_ASK}`);
      const refused = await run(fixture.manager, name, 'try:\n    input()\nexcept EOFError as e:\n    print("caught:", e)', {
        onInput: async () => {
          throw new Error('the person dismissed the question');
        },
      });
      assert.equal(refused.stdout, 'caught: input() has no answer: the person dismissed the question');
    });

    it('an interrupt ends a cell waiting for its answer; the question is given up, and the next cell runs', async () => {
      let givenUp!: () => void;
      const abandoned = new Promise<void>((resolve) => (givenUp = resolve));
      let asked!: () => void;
      const questionAsked = new Promise<void>((resolve) => (asked = resolve));
      const { done } = await fixture.manager.exec(name, 'input("never answered? ")', {
        onInput: (_request, signal) =>
          new Promise<string>((resolve) => {
            asked();
            signal.addEventListener('abort', () => {
              givenUp();
              resolve('too late');
            });
          }),
      });
      await questionAsked;
      fixture.manager.interrupt(name);
      assert.match(errorOf(await done), /KeyboardInterrupt/);
      await abandoned;
      const next = await run(fixture.manager, name, 'reply = input("again? ")\nreply', { onInput: async () => 'fresh' });
      assert.equal(valueOf(next.result), "'fresh'", 'the late answer to the old question is not taken for the new one');
    });

    if (engine === 'sandbox')
      it('refuses what is not a question or a display on the device a sandbox kernel talks to its host through, and the machine goes on', async () => {
        const code = [
          'import os',
          'fd = os.open("/dev/perennial-host", os.O_RDWR)',
          'errors = []',
          'for attempt in (lambda: os.read(fd, 10), lambda: os.write(fd, b"not json\\n")):',
          '    try:',
          '        attempt()',
          '    except OSError as e:',
          '        errors.append(e.errno)',
          'os.close(fd)',
          'import errno',
          'errors == [errno.EINVAL, errno.EINVAL]',
        ].join('\n');
        assert.equal(valueOf((await run(fixture.manager, name, code, { onInput: async () => 'unused' })).result), 'True');
        assert.equal(valueOf((await run(fixture.manager, name, 'input("still? ")', { onInput: async () => 'yes' })).result), "'yes'");
      });

    it('asks again after the machine was swapped out and back', async () => {
      await run(fixture.manager, name, 'first = input("First? ")', { onInput: async () => 'one' });
      await fixture.manager.swap(name);
      const { result } = await run(fixture.manager, name, 'first, input("Second? ")', { onInput: async () => 'two' });
      assert.equal(valueOf(result), "('one', 'two')");
    });

    it('answers over the WebSocket REPL of a real server, for a client that passes onInput', async () => {
      const { dir, cleanup } = await tempDataDir({ empty: engine === 'python' });
      const server = await LocalServer.start({ dataDir: dir, defaultEngine: engine });
      const client = new HttpClient({ baseUrl: server.url, token: server.token });
      try {
        const machine = (await client.create({ engine })).name;
        const prompts: string[] = [];
        const answered = await client.run(machine, 'n = int(input("How many? "))\nn * 2', {
          onInput: async ({ prompt }) => {
            prompts.push(prompt);
            return '21';
          },
        });
        assert.equal(valueOf(answered.result), '42');
        assert.deepEqual(prompts, ['How many? ']);
        const unasked = await client.run(machine, 'input()');
        assert.equal(lastLine(errorOf(unasked.result)), `EOFError: input() has no answer: ${NOBODY_TO_ASK}`, 'a client without onInput is never asked');
      } finally {
        await client.close();
        await server.close();
        await cleanup();
      }
    });
  });

function lastLine(text: string): string {
  return text.split('\n').at(-1)!;
}
