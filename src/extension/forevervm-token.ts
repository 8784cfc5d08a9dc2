import * as vscode from 'vscode';
import type { Backends } from './backends.ts';
import { COMMANDS } from './commands.ts';

/**
 * "Perennial: Set ForeverVM Token" asks for the token and keeps it in SecretStorage, never in
 * settings; "Perennial: Remove ForeverVM Token" forgets it.
 */
export function registerTokenCommands(backends: Backends): vscode.Disposable {
  // A token passed as an argument (from another extension or a script) is stored without asking.
  const set = vscode.commands.registerCommand(COMMANDS.setForeverVMToken, async (given?: string) => {
    const token =
      typeof given === 'string' && given.trim()
        ? given
        : await vscode.window.showInputBox({
            title: 'ForeverVM token',
            prompt: "The token of your ForeverVM account (kept in VS Code's secret storage)",
            password: true,
            ignoreFocusOut: true,
            validateInput: (value) => (/^\S+$/.test(value.trim()) ? undefined : 'A token is one word, without spaces'),
          });
    if (token === undefined) return;
    await backends.setToken(token.trim());
    void vscode.window.showInformationMessage('Perennial: ForeverVM token saved.');
  });
  const remove = vscode.commands.registerCommand(COMMANDS.removeForeverVMToken, async () => {
    await backends.removeToken();
    void vscode.window.showInformationMessage('Perennial: ForeverVM token removed.');
  });
  return vscode.Disposable.from(set, remove);
}
