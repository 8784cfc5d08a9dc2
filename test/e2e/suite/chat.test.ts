/**
 * The MCP App view in VS Code's own chat: the suite's chat host (test/e2e/chat-host) runs code
 * through Perennial's MCP tools within a chat request, as an agent would, and VS Code renders the
 * view linked to the call. An action in the view goes through VS Code to the server.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { testChanges } from './changes.ts';
import { invokeJson, MCP_SERVER_ID, tool } from './tools.ts';
import { count, eventually, screenshot, ui } from './workbench.ts';

const CODE = [
  'import matplotlib',
  'matplotlib.use("Agg")',
  'import matplotlib.pyplot as plt',
  'print("hello from the chat")',
  'plt.figure(figsize=(4, 2.5)); plt.plot([1, 4, 9, 16], marker="o"); plt.title("squares"); plt.show()',
  'squares = [1, 4, 9, 16]',
  '6 * 7',
].join('\n');

/** VS Code's prompts before a call runs, and before its result goes to the model. */
const ASKS_TO_RUN = 'role=button[name=/^(Allow(?! results)|Continue)/]';
const ASKS_FOR_RESULT = 'role=button[name=/^Allow results/]';
/** Parts of the view (the suite's notebooks, in other frames, have outputs of like classes). */
const CALL = 'section[aria-label="The call"]';
const MACHINE = 'section[aria-label="The machine now"]';

/** The chat, open on the scripted model, with Perennial's MCP server started. */
async function openChat(): Promise<void> {
  await eventually(async () => {
    await vscode.commands.executeCommand('workbench.mcp.startServer', MCP_SERVER_ID, { waitForLiveTools: true });
    return tool('run-python-in-repl');
  }, "Perennial's MCP tools");
  // The chat finds a request's model among those the extension host has listed.
  await eventually(async () => (await vscode.lm.selectChatModels({ vendor: 'perennial-tests' })).length > 0 || undefined, 'the scripted model');
  // The chat takes the model its picker shows: open it, and choose the scripted one there.
  await vscode.commands.executeCommand('workbench.action.chat.open');
  await eventually(async () => {
    await vscode.commands.executeCommand('workbench.action.chat.changeModel', { vendor: 'perennial-tests', id: 'scripted', family: 'scripted' });
    return (await count('.interactive-input-part >> text=Scripted')) > 0 || undefined;
  }, 'the chat to take the scripted model');
}

suite('Perennial in VS Code chat', () => {
  const changes = testChanges();
  // The chat takes a third of the window: the suite's later screenshots are of the editor.
  suiteTeardown(() => vscode.commands.executeCommand('workbench.action.closeAuxiliaryBar'));

  test("a call's MCP App view renders in the chat; its Re-run and Fork reach the server", async () => {
    await changes.setting('chat.mcp.apps.enabled', true);
    await openChat();
    const before = (await invokeJson<{ repls: Array<{ name: string }> }>('list-python-repls', {})).repls.map((m) => m.name);
    // The command returns once the request is answered, which waits for the approvals below.
    const asked = vscode.commands.executeCommand('workbench.action.chat.open', { query: `@runner ${CODE}` });
    // VS Code asks before each MCP tool call that is not read-only: allowed, as a person would.
    // The click is dispatched, since the prompt can be scrolled out of the chat's sight.
    await eventually(
      async () => {
        if (await count(ASKS_TO_RUN)) await ui({ dispatch: ASKS_TO_RUN }).catch(() => []);
        return (await ui({ text: `${CALL} p.running` })).some((line) => line.startsWith('Done in the REPL')) || undefined;
      },
      'the view to say that the chat holds the result of the finished call',
      120_000,
    );
    // run-python-in-repl is open-world, so VS Code holds its result until the person allows it.
    await screenshot('chat-mcp-app-held');
    await ui({ dispatch: ASKS_FOR_RESULT });
    await eventually(async () => (await count(`${CALL} .figures img`)) > 0 || undefined, 'the view of the call in the chat, with its figure');
    assert.deepEqual(await ui({ text: `${CALL} pre.value` }), ['42']);
    assert.ok((await ui({ text: `${CALL} pre.stream` })).some((text) => text.includes('hello from the chat')));
    await eventually(async () => (await ui({ text: `${MACHINE} table.variables td button` })).includes('squares') || undefined, 'the variables in the view');
    await asked;
    await ui({ dispatch: '.chat-scroll-down' });
    await screenshot('chat-mcp-app');

    // VS Code gives the view no toolInfo: it knows the call is a run from its input, and can re-run it.
    await ui({ dispatch: 'button[title^="Run this code again"]' });
    // The view asks first, in a dialog of its own, once it has drawn it.
    const runAgain = 'role=alertdialog >> role=button[name="Run again"]';
    await eventually(async () => (await count(runAgain)) > 0 || undefined, 'the view to ask before it runs the code again');
    await ui({ dispatch: runAgain });
    await eventually(
      async () => (await ui({ text: `${CALL} .caption` })).includes('Re-run of In [0] as In [1]') || undefined,
      'the re-run, through VS Code, in the view',
    );
    // The call's own view is the last in the chat.
    await ui({ dispatch: 'button[title^="Make a new REPL"]' });
    const status = await eventually(
      async () => (await ui({ text: 'p.status.ok[aria-live]' })).find((line) => line.startsWith('Forked')),
      'the fork from the view',
    );
    const fork = /as (\S+)$/.exec(status)![1]!;
    const after = (await invokeJson<{ repls: Array<{ name: string; tags: Record<string, string> }> }>('list-python-repls', {})).repls;
    const forked = after.find((m) => m.name === fork);
    assert.ok(forked && !before.includes(fork), `the fork ${fork} is a new machine`);
    const variables = (await invokeJson<{ variables: Array<{ name: string }> }>('list-repl-variables', { replId: fork })).variables;
    assert.deepEqual(
      variables.map((v) => v.name),
      ['squares'],
    );
  });

  test('a long cell run through the chat is an MCP task: the chat shows how long it has run and its last output', async () => {
    // Without the MCP App view, which would take the call's place in the chat.
    await changes.setting('chat.mcp.apps.enabled', false);
    await openChat();
    const code = 'import time\nfor step in range(12):\n    print(f"step {step}", flush=True)\n    time.sleep(1)\n"counted"';
    // The chat may hold earlier requests: this one's answer is the next "Ran it in". The chat draws
    // its list in animation frames, which a headless page draws only for a screenshot.
    const chatText = async (shot = 'chat-task-progress') => {
      await screenshot(shot);
      return (await ui({ text: '.interactive-session .interactive-item-container' })).join('\n');
    };
    const ranBefore = [...(await chatText('chat-task-done')).matchAll(/Ran it in (\S+)\./g)].length;
    const asked = vscode.commands.executeCommand('workbench.action.chat.open', { query: `@runner ${code}` });
    // A direct call's progress would be the output line alone: this is the task's status (VS Code
    // shows it with non-breaking spaces).
    const status = await eventually(
      async () => {
        if (await count(ASKS_TO_RUN)) await ui({ dispatch: ASKS_TO_RUN }).catch(() => []);
        const chat = await chatText();
        return /Working\sfor\s[0-9.]+\ss;\slast\soutput:\sstep\s([3-9]|1[01])\b/.exec(chat)?.[0];
      },
      "the task's progress in the chat",
      120_000,
    );
    console.log(`the chat showed: ${status}`);
    const repl = await eventually(
      async () => {
        if (await count(ASKS_FOR_RESULT)) await ui({ dispatch: ASKS_FOR_RESULT }).catch(() => []);
        const ran = [...(await chatText('chat-task-done')).matchAll(/Ran it in (\S+)\./g)];
        return ran.length > ranBefore ? ran.at(-1)![1] : undefined;
      },
      'the task to end, and its result to reach the chat',
      120_000,
    );
    const history = await invokeJson<{ history: Array<{ result: { value?: string } }> }>('get-repl-history', { replId: repl, last: 1 });
    assert.equal(history.history[0]!.result.value, "'counted'");
    await asked;
  });
});
