import * as vscode from 'vscode';
import type { InputAnswerer } from '../shared/types.ts';

/**
 * A running cell's `input()` in VS Code: an input box with its prompt (a password box for
 * `getpass`), closed when the cell ends without the answer. Escape refuses to answer, and the
 * cell's EOFError says so.
 */
export const askInInputBox: InputAnswerer = async ({ prompt, password }, signal) => {
  const cellEnded = new vscode.CancellationTokenSource();
  signal.addEventListener('abort', () => cellEnded.cancel());
  try {
    const answer = await vscode.window.showInputBox(
      { title: 'Python asks (input)', prompt: prompt.trim() || 'The running cell asks for input', password, ignoreFocusOut: true },
      cellEnded.token,
    );
    if (answer === undefined) throw new Error('the question was dismissed in VS Code');
    return answer;
  } finally {
    cellEnded.dispose();
  }
};
