// The chat host of Perennial's end-to-end suite. VS Code's chat answers a request only when a
// language model is there, and offline none is: a scripted one stands in (it only says what was
// done). The participant @runner runs the request's text in a new python-engine REPL through
// Perennial's MCP tools, passing the request's invocation token, so that the chat shows each call
// as an agent's would be shown, with the MCP App view linked to it.
const vscode = require('vscode');

const SERVER = 'perennial.perennial-repl/Perennial Python REPLs';

/** A tool of Perennial's MCP server, whose names VS Code prefixes. */
const tool = (name) => vscode.lm.tools.find((t) => t.name.endsWith(name) || t.name.endsWith(name.replaceAll('-', '_')));
const text = (result) => result.content.map((part) => part.value ?? '').join('');

exports.activate = (context) => {
  context.subscriptions.push(
    vscode.lm.registerLanguageModelChatProvider('perennial-tests', {
      provideLanguageModelChatInformation: async () => [
        {
          id: 'scripted',
          name: 'Scripted',
          family: 'scripted',
          version: '1',
          maxInputTokens: 100000,
          maxOutputTokens: 1000,
          // Agent mode, the chat's default, lists only models that can call tools.
          capabilities: { toolCalling: true },
          // The chat picks it for a request only as the default, or when chosen in its picker.
          isDefault: true,
          isUserSelectable: true,
        },
      ],
      provideTokenCount: async () => 1,
      provideLanguageModelChatResponse: async (_model, _messages, _options, progress) => progress.report(new vscode.LanguageModelTextPart('Done.')),
    }),
    vscode.chat.createChatParticipant('perennial-tests.runner', async (request, _context, stream, token) => {
      for (let tries = 0; !tool('run-python-in-repl') && tries < 60; tries++) {
        await vscode.commands.executeCommand('workbench.mcp.startServer', SERVER, { waitForLiveTools: true, autoTrustChanges: true });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const invoke = (name, input) => vscode.lm.invokeTool(tool(name).name, { input, toolInvocationToken: request.toolInvocationToken }, token);
      const { replId } = JSON.parse(text(await invoke('create-python-repl', { engine: 'python' })));
      await invoke('run-python-in-repl', { replId, pythonCode: request.prompt });
      stream.markdown(`Ran it in ${replId}.`);
    }),
  );
};
