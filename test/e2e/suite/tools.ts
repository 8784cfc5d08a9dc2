/** Perennial's MCP tools as VS Code's language model API shows them to Copilot. */
import * as vscode from 'vscode';
import type { Changes } from './changes.ts';
import { eventually } from './workbench.ts';

export const MCP_SERVER_ID = 'perennial.perennial-repl/Perennial Python REPLs';

/** A tool by its MCP name: VS Code prefixes it with the server's name, in a way that varies by version. */
export function tool(name: string): vscode.LanguageModelToolInformation | undefined {
  return vscode.lm.tools.find((candidate) => candidate.name.endsWith(name) || candidate.name.endsWith(name.replaceAll('-', '_')));
}

/**
 * Calls a tool as Copilot would, and gives its text: VS Code hands the structured content to the
 * model as JSON. A window that has not listed the tools yet (VS Code learns them when the server
 * first starts) lists them first.
 */
export async function invoke(name: string, input: object, token?: vscode.CancellationToken): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const found = tool(name) ?? (await toolsListed(), tool(name))!;
    try {
      const result = await vscode.lm.invokeTool(found.name, { input, toolInvocationToken: undefined }, token);
      return result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
    } catch (error) {
      // VS Code restarts the MCP server half a second after a setting changed its definition, and
      // cancels the calls in flight: made again, as Copilot would be asked to. A cancel of the caller's own is not.
      if (attempt >= 3 || token?.isCancellationRequested || !/Canceled/.test((error as Error).message)) throw error;
    }
  }
}

export async function invokeJson<T>(name: string, input: object, token?: vscode.CancellationToken): Promise<T> {
  const text = await invoke(name, input, token);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`${name} answered ${text}`);
  }
}

/** Waits until VS Code lists Perennial's tools (it asks providers for their servers lazily). */
export function toolsListed(): Promise<vscode.LanguageModelToolInformation> {
  return eventually(async () => {
    await vscode.commands.executeCommand('workbench.mcp.startServer', MCP_SERVER_ID, { waitForLiveTools: true });
    return tool('run-python-in-repl');
  }, `the tools of ${MCP_SERVER_ID}`);
}

/** A new REPL made through the tools, with `code` run in it; deleted when the test ends. */
export async function newRepl(changes: Changes, code?: string, engine?: 'python' | 'sandbox'): Promise<string> {
  const { replId } = await invokeJson<{ replId: string }>('create-python-repl', engine ? { engine } : {});
  changes.onEnd(() => invoke('delete-python-repl', { replId }));
  if (code) {
    const { error } = await invokeJson<{ error: string | null }>('run-python-in-repl', { replId, pythonCode: code });
    if (error) throw new Error(`${code} failed in ${replId}: ${error}`);
  }
  return replId;
}

/** The names of the machines the tools list, from whichever backend they reach. */
export async function listedMachines(): Promise<string[]> {
  return (await invokeJson<{ repls: Array<{ name: string }> }>('list-python-repls', {})).repls.map((repl) => repl.name);
}

/**
 * Waits until the tools answer from the local server: after a change of backend, or after its
 * server stopped (a ForeverVM server gone away answers "Cannot reach", which does not parse).
 */
export function toolsReachLocal(): Promise<unknown> {
  return eventually(async () => {
    try {
      return JSON.parse(await invoke('list-python-repls', {})) as unknown;
    } catch {
      return undefined;
    }
  }, "Copilot's tools to reach the local server");
}
