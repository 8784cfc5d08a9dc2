/**
 * What a test changes in VS Code, put back when it ends: no test may depend on what another left
 * behind, so that the suite passes in any order.
 */
import * as vscode from 'vscode';

export class Changes {
  #undo: Array<() => Promise<unknown>> = [];

  /** Sets a user setting; the end puts back the user value it had (or none). */
  async setting(key: string, value: unknown): Promise<void> {
    const settings = vscode.workspace.getConfiguration();
    const before = settings.inspect(key)?.globalValue;
    await settings.update(key, value, vscode.ConfigurationTarget.Global);
    this.#undo.push(() => Promise.resolve(vscode.workspace.getConfiguration().update(key, before, vscode.ConfigurationTarget.Global)));
  }

  /** Something else to undo at the end, after what was changed later. */
  onEnd(undo: () => Promise<unknown>): void {
    this.#undo.push(undo);
  }

  async restore(): Promise<void> {
    const undo = this.#undo.reverse();
    this.#undo = [];
    for (const step of undo) await step();
  }
}

/** Changes undone after each test of the suite that calls this. */
export function testChanges(): Changes {
  const changes = new Changes();
  teardown(() => changes.restore());
  return changes;
}

/** Changes undone once the suite that calls this has run. */
export function suiteChanges(): Changes {
  const changes = new Changes();
  suiteTeardown(() => changes.restore());
  return changes;
}
