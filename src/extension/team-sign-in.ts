import * as vscode from 'vscode';
import { HttpClient } from '../client/http-client.ts';
import { checkedAccount, type Backends } from './backends.ts';
import { COMMANDS } from './commands.ts';
import { reporting } from './reporting.ts';

/** What a script or another extension may pass to skip the questions. */
interface Given {
  url?: string;
  key?: string;
}

/**
 * "Perennial: Sign In to a Team Server" asks for the server's address and the person's key, checks
 * the key with the server (`/v1/whoami` names its person), and only then keeps the address in the
 * settings and the key in SecretStorage; "Sign Out of the Team Server" forgets the key. Copilot's
 * MCP connection to a server whose admin set up sign-in needs no key: VS Code signs the person in
 * with the team's identity provider when the server asks.
 */
export function registerTeamSignIn(backends: Backends): vscode.Disposable {
  const signIn = vscode.commands.registerCommand(COMMANDS.signInToTeam, (given?: Given) =>
    reporting(backends.log, 'sign in to the team server', async () => {
      const url = given?.url?.trim() || (await askForUrl(backends.teamUrl));
      if (url === undefined) return;
      const key = given?.key?.trim() || (await askForKey(url));
      if (key === undefined) return;
      const baseUrl = url.replace(/\/+$/, '');
      const person = await whoIs(baseUrl, key);
      await vscode.workspace.getConfiguration('perennial').update('team.url', baseUrl, vscode.ConfigurationTarget.Global);
      await backends.setTeamKey(key);
      backends.log.info(`signed in to the team server ${baseUrl} as ${person}`);
      const said = `Perennial: signed in to ${baseUrl} as ${person}.`;
      if (backends.active === 'team') return void vscode.window.showInformationMessage(said);
      // Not waited for: the command ends now, whenever the notification is answered.
      const use = 'Run New Machines There';
      void vscode.window.showInformationMessage(said, use).then((choice) => {
        if (choice === use) void vscode.workspace.getConfiguration('perennial').update('backend', 'team', vscode.ConfigurationTarget.Global);
      });
    }),
  );
  const signOut = vscode.commands.registerCommand(COMMANDS.signOutOfTeam, async () => {
    await backends.removeTeamKey();
    void vscode.window.showInformationMessage('Perennial: signed out of the team server (its key is forgotten).');
  });
  return vscode.Disposable.from(signIn, signOut);
}

function askForUrl(current: string | undefined): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title: 'Team server',
    prompt: "The address of your team's Perennial server",
    placeHolder: 'https://perennial.example.com',
    value: current ?? '',
    ignoreFocusOut: true,
    validateInput: (value) => (URL.canParse(value.trim()) && /^https?:/.test(value.trim()) ? undefined : 'An http:// or https:// address'),
  });
}

function askForKey(url: string): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title: `Your key on ${url}`,
    prompt: "Your key (prn_…) from the team's admin or perennial team key create; kept in VS Code's secret storage",
    password: true,
    ignoreFocusOut: true,
    validateInput: (value) => (/^\S+$/.test(value.trim()) ? undefined : 'A key is one word, without spaces'),
  });
}

/** The key's person, as the server names it; a refusal or an unreachable server says which. */
async function whoIs(baseUrl: string, key: string): Promise<string> {
  const client = new HttpClient({ baseUrl, token: key });
  try {
    return await checkedAccount(client, {
      refused: `${baseUrl} refused the key (revoked, expired or mistyped): nothing was saved`,
      unreachable: (reason) => `cannot reach ${baseUrl} (${reason}): nothing was saved`,
    });
  } finally {
    void client.close();
  }
}
