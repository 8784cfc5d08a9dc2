import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { testChanges } from './changes.ts';
import { hostedStandIn } from './hosted.ts';
import { teamStandIn, type TeamCall } from './team-server.ts';
import { invokeJson, listedMachines, MCP_SERVER_ID, newRepl } from './tools.ts';
import { eventually, screenshot, TREE_ROWS, ui } from './workbench.ts';

/**
 * Waits until Copilot's tools list `machine`: they reach the backend that has it. Calls VS Code
 * cancels while it replaces the server, and answers of a backend gone away, are waited past.
 */
async function toolsList(machine: string, timeoutMs = 30_000): Promise<void> {
  let last = 'nothing yet';
  await eventually(
    async () => {
      try {
        const names = await listedMachines();
        last = JSON.stringify(names);
        return names.includes(machine) || undefined;
      } catch (error) {
        last = (error as Error).message;
        return undefined;
      }
    },
    `Copilot's tools to list ${machine}`,
    timeoutMs,
  ).catch((error: Error) => {
    throw new Error(`${error.message}; the last answer: ${last}`);
  });
}

/**
 * A tool call made just after the backend changed. VS Code's MCP client can orphan a
 * task-augmented call made while it replaces the server's connection: the server answers it, and
 * VS Code never asks for the task again (the old connection's teardown takes the handler of every
 * task the server has, new ones too). Such a call is cancelled after `attemptMs` without an
 * answer and made again, as a person would.
 */
async function invokeAfterSwitch<T>(name: string, input: object, attemptMs = 20_000): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const cancel = new vscode.CancellationTokenSource();
    const timer = setTimeout(() => cancel.cancel(), attemptMs);
    try {
      return await invokeJson<T>(name, input, cancel.token);
    } catch (error) {
      if (attempt >= 3 || !cancel.token.isCancellationRequested) throw error;
    } finally {
      clearTimeout(timer);
      cancel.dispose();
    }
  }
}

suite('Perennial in VS Code: local, hosted and team backends', () => {
  const changes = testChanges();

  test('with a ForeverVM token, the view gets a ForeverVM root, and code runs in hosted machines', async () => {
    const hosted = await hostedStandIn(changes);
    const name = await hosted.newMachine({ engine: 'python', tags: { where: 'hosted' } });
    await vscode.commands.executeCommand('workbench.view.extension.perennial');
    await vscode.commands.executeCommand('perennial.refresh');
    await eventually(async () => {
      const rows = await ui({ text: TREE_ROWS });
      return rows.some((row) => row.includes('ForeverVM')) && rows.some((row) => row.includes(name) && row.includes('where=hosted')) ? true : undefined;
    }, `the ForeverVM root with ${name}`);

    await vscode.commands.executeCommand('perennial.selectMachine', { source: 'forevervm', name });
    const file = join(process.env.PERENNIAL_E2E_WORKSPACE!, 'hosted.py');
    writeFileSync(file, 'w = 6 * 7\nw\n');
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
    editor.selection = new vscode.Selection(0, 0, 1, 99);
    await vscode.commands.executeCommand('perennial.runSelection');
    // The panel's last entry is this run: the machine's name, then the value alone on its line.
    await eventually(
      async () => (/\n42$/.test((await ui({ text: 'main#entries section:last-child' })).join('\n').trim()) ? true : undefined),
      'the hosted value in the output panel',
    );
    // Variables of a hosted machine come from an instruction that lists them.
    await ui({ click: `${TREE_ROWS}:has-text("${name}")` });
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes('w: int = 42')) ? true : undefined), 'the hosted variable w');

    // With the forevervm backend, the MCP server is `perennial mcp --backend forevervm` over stdio.
    await changes.setting('perennial.backend', 'forevervm');
    await toolsList(name);
    const run = await invokeJson<{ value: string }>('run-python-in-repl', { replId: name, pythonCode: 'w + 1' });
    assert.equal(run.value, '43');
  });

  test("switching perennial.backend takes Copilot's next tool calls to that backend, either way, however soon it is switched back", async () => {
    const local = await newRepl(changes);
    const hosted = await hostedStandIn(changes);
    const remote = await hosted.newMachine({ tags: { where: 'hosted' } });
    await toolsList(local);
    for (let round = 0; round < 2; round++) {
      await changes.setting('perennial.backend', 'forevervm');
      await toolsList(remote);
      await changes.setting('perennial.backend', 'local');
      await toolsList(local);
    }
    // The MCP server starts on ForeverVM just after the switch (VS Code starts a stopped server
    // for the first call), and the person switches back before VS Code has applied the switch:
    // VS Code compares definitions half a second after the last change.
    for (let round = 0; round < 3; round++) {
      await vscode.commands.executeCommand('workbench.mcp.stopServer', MCP_SERVER_ID);
      const asked = hosted.requests.length;
      await changes.setting('perennial.backend', 'forevervm');
      const started = vscode.commands.executeCommand('workbench.mcp.startServer', MCP_SERVER_ID, { waitForLiveTools: true });
      // The server is resolved on ForeverVM once the extension checked the token there.
      await eventually(() => hosted.requests.slice(asked).includes('/v1/whoami') || undefined, 'the ForeverVM server to be resolved', 20_000);
      await changes.setting('perennial.backend', 'local');
      await Promise.resolve(started).catch(() => undefined);
      await toolsList(local);
    }
  });

  test("signed in to a team server, the view shows the person's machines and those shared with them, marked, and Copilot's tools run on theirs", async () => {
    const team = await teamStandIn(changes);
    const create = async (as: TeamCall, tags: Record<string, string>) =>
      (await as<{ machine_name: string }>('POST', '/v1/machine/new', { engine: 'sandbox', tags })).machine_name;
    const shared = await create(team.alice, { who: 'alice' });
    await team.alice('POST', `/v1/machine/${shared}/shares`, { with: 'bob', right: 'read' });
    const hidden = await create(team.alice, {});
    const own = await create(team.bob, { who: 'bob' });

    // A refused key is not kept, nor is the address.
    await changes.setting('perennial.team.url', '');
    await vscode.commands.executeCommand('perennial.signInToTeam', { url: team.url, key: 'prn_0000_refused' });
    assert.equal(vscode.workspace.getConfiguration('perennial').get('team.url'), '');
    await vscode.commands.executeCommand('perennial.signInToTeam', { url: team.url, key: team.bobsKey });
    changes.onEnd(() => Promise.resolve(vscode.commands.executeCommand('perennial.signOutOfTeam')));
    assert.equal(vscode.workspace.getConfiguration('perennial').get('team.url'), team.url);

    await vscode.commands.executeCommand('workbench.view.extension.perennial');
    const rows = await eventually(async () => {
      const rows = await ui({ text: TREE_ROWS });
      const has = (...parts: string[]) => rows.some((row) => parts.every((part) => row.includes(part)));
      return has('Team server', team.url) && has(own, 'who=bob') && has(shared, "alice's, shared to read") ? rows : undefined;
    }, "the team root with bob's machine and the one alice shared");
    assert.ok(!rows.some((row) => row.includes(hidden)), `alice's unshared ${hidden} is not bob's to see: ${rows.join(' | ')}`);
    await screenshot('team-server-machines');

    // Copilot's tools reach the team server with bob's key, and see what bob sees.
    await changes.setting('perennial.backend', 'team');
    await toolsList(own);
    assert.ok(!(await listedMachines()).includes(hidden));
    const run = await invokeAfterSwitch<{ value: string }>('run-python-in-repl', { replId: own, pythonCode: '6 * 7' });
    assert.equal(run.value, '42');

    // Unshared, alice's machine leaves bob's view at the next listing.
    await team.alice('DELETE', `/v1/machine/${shared}/shares/bob`);
    await eventually(async () => {
      await vscode.commands.executeCommand('perennial.refresh');
      const rows = await ui({ text: TREE_ROWS });
      return rows.some((row) => row.includes(own)) && !rows.some((row) => row.includes(shared)) ? true : undefined;
    }, `${shared} to leave bob's view once unshared`);
  });
});
