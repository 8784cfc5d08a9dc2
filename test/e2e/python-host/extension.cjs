// A stand-in for the Python extension (ms-python.python) in Perennial's end-to-end suite: its
// `environments` API as `@vscode/python-extension` describes it, with the interpreter a test
// selects through the command `perennial-tests.selectInterpreter` (an empty path: none selected).
const vscode = require('vscode');

exports.activate = (context) => {
  let path = '';
  const changed = new vscode.EventEmitter();
  context.subscriptions.push(
    changed,
    vscode.commands.registerCommand('perennial-tests.selectInterpreter', (selected) => {
      path = selected ?? '';
      changed.fire({ id: path, path, resource: undefined });
    }),
  );
  return {
    environments: {
      getActiveEnvironmentPath: () => ({ id: path, path }),
      onDidChangeActiveEnvironmentPath: changed.event,
    },
  };
};
