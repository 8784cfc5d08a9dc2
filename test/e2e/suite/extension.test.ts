import assert from 'node:assert/strict';
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

suite('Perennial in VS Code', () => {
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
    const { replId } = JSON.parse(await invoke('create-python-repl', {})) as { replId: string };
    assert.match(replId, /^[\w-]{16}$/);
    const first = JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x = 20 + 1' })) as { value: string | null; error: string | null };
    assert.deepEqual([first.value, first.error], [null, null]);
    const second = JSON.parse(await invoke('run-python-in-repl', { replId, pythonCode: 'x * 2' })) as { value: string | null };
    assert.equal(second.value, '42');
  });
});
