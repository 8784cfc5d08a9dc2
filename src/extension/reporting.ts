import * as vscode from 'vscode';

/** Runs a command's work; a failure becomes a notification with a way to the details. */
export async function reporting<T>(log: vscode.LogOutputChannel, what: string, work: () => Promise<T>): Promise<T | undefined> {
  try {
    return await work();
  } catch (error) {
    log.error(`could not ${what}: ${(error as Error).stack ?? error}`);
    // Not waited for: the command ends now, whenever the notification is dismissed.
    void vscode.window.showErrorMessage(`Perennial could not ${what}: ${(error as Error).message}`, 'Show Log').then((choice) => choice && log.show());
    return undefined;
  }
}
