import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as vscode from 'vscode';

const EXTENSION_ID = 'perennial.perennial';
const MCP_SERVER_ID = `${EXTENSION_ID}/Perennial Python REPLs`;

/** Polls `probe` until it returns something, for state that VS Code updates asynchronously. */
async function eventually<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A tool by its MCP name: VS Code prefixes it with the server's name, in a way that varies by version. */
function tool(name: string): vscode.LanguageModelToolInformation | undefined {
  return vscode.lm.tools.find((candidate) => candidate.name.endsWith(name) || candidate.name.endsWith(name.replaceAll('-', '_')));
}

async function invoke(name: string, input: object): Promise<string> {
  const result = await vscode.lm.invokeTool(tool(name)!.name, { input, toolInvocationToken: undefined });
  return result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
}

let actions = 0;

/** Acts on the workbench page through the runner (see run-vscode.mjs): clicks, reads text. */
async function ui(action: { click?: string; text?: string }): Promise<string[]> {
  const id = `action-${++actions}`;
  console.log(`@@ui:${id}:${JSON.stringify(action)}`);
  const file = join(process.env.PERENNIAL_E2E_UI!, `${id}.json`);
  const answer = await eventually(() => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { ok: boolean; text: string[]; error?: string }) : undefined), `the page to answer ${id}`);
  if (!answer.ok) throw new Error(`the page could not ${JSON.stringify(action)}: ${answer.error}`);
  return answer.text;
}

async function screenshot(name: string): Promise<void> {
  const file = join(process.env.PERENNIAL_E2E_SHOTS!, `${name}.png`);
  rmSync(file, { force: true });
  console.log(`@@screenshot:${name}`);
  await eventually(() => existsSync(file) || undefined, `the screenshot ${name}`);
}

/** The rows of the Machines view, as shown. */
const TREE_ROWS = '.part.sidebar .monaco-list-row';

suite('Perennial in VS Code', () => {
  let replId = '';

  test('activates', async () => {
    const extension = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(extension, 'the extension is installed');
    await extension.activate();
    assert.ok(extension.isActive);
    assert.ok((await vscode.commands.getCommands(true)).includes('perennial.setForeverVMToken'));
  });

  test("the MCP server starts through VS Code's own client, and its tools appear", async () => {
    // VS Code asks providers for their servers lazily: until it has, starting by id does nothing.
    await eventually(async () => {
      await vscode.commands.executeCommand('workbench.mcp.startServer', MCP_SERVER_ID, { waitForLiveTools: true, autoTrustChanges: true });
      return tool('create-python-repl');
    }, `the tools of ${MCP_SERVER_ID} (tools now: ${vscode.lm.tools.map((t) => t.name).join(', ')})`);
    for (const name of ['run-python-in-repl', 'list-repl-variables', 'delete-python-repl']) assert.ok(tool(name), `the tool ${name}`);
  });

  test('Copilot-style tool calls: create a REPL, then run in it twice, and state persists', async () => {
    // VS Code hands a tool's structured content to the model, as JSON text.
    replId = (JSON.parse(await invoke('create-python-repl', {})) as { replId: string }).replId;
    assert.match(replId, /^[\w-]{16}$/);
    const first = JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x = 20 + 1' })) as { value: string | null; error: string | null };
    assert.deepEqual([first.value, first.error], [null, null]);
    const second = JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x * 2' })) as { value: string | null };
    assert.equal(second.value, '42');
  });

  test('the Machines view shows that machine, and its variables when expanded', async () => {
    await vscode.commands.executeCommand('workbench.view.extension.perennial');
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId)) ? true : undefined), `${replId} in the Machines view`);
    await ui({ click: `${TREE_ROWS}:has-text("${replId}")` });
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes('x: int = 21')) ? true : undefined), 'the variable x in the Machines view');
    await screenshot('machines-tree');
  });

  test('Delete removes the machine, from the server and from the view', async () => {
    // The smoke-test driver leaves modal dialogs unanswered: turn the confirmation off.
    await vscode.workspace.getConfiguration('perennial').update('confirmDelete', false, vscode.ConfigurationTarget.Global);
    await vscode.commands.executeCommand('perennial.deleteMachine', { kind: 'machine', machine: { name: replId } });
    const listed = JSON.parse(await invoke('list-python-repls', {})) as { repls: Array<{ replId: string }> } | Array<{ replId: string }>;
    assert.ok(!JSON.stringify(listed).includes(replId), `${replId} is gone from ${JSON.stringify(listed)}`);
    await eventually(async () => ((await ui({ text: TREE_ROWS })).some((row) => row.includes(replId)) ? undefined : true), `${replId} to leave the Machines view`);
  });
});
