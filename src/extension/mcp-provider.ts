import * as vscode from 'vscode';
import { CONFINED_ENGINE } from '../engines/descriptors.ts';
import { runningServer } from '../client/local-server-connection.ts';
import { VERSION } from '../shared/version.ts';
import { checkedAccount, type Backends } from './backends.ts';
import type { MachineDefaults } from './machine-defaults.ts';

/** The provider's id in package.json `contributes.mcpServerDefinitionProviders`. */
const PROVIDER_ID = 'perennial.mcp';
export const MCP_SERVER_LABEL = 'Perennial Python REPLs';

/**
 * Perennial's MCP server for Copilot agent mode and any other MCP client in VS Code: the local
 * server's `/mcp` endpoint over HTTP, a team server's (with the person's key, or none: VS Code then
 * signs the person in as the server asks), or `perennial mcp --backend forevervm` over stdio for
 * the hosted service. Resolving it starts the local server when it does not run.
 */
export function registerMcpProvider(backends: Backends, defaults: MachineDefaults, cliPath: string): vscode.Disposable {
  const changed = new vscode.EventEmitter<void>();
  const provider = vscode.lm.registerMcpServerDefinitionProvider(PROVIDER_ID, {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: async () => [await definition(backends, defaults, cliPath, false)],
    resolveMcpServerDefinition: async () => {
      try {
        backends.log.info(`starting the MCP server (${backends.active} backend)`);
        return await definition(backends, defaults, cliPath, true);
      } catch (error) {
        backends.log.error(`the MCP server cannot start: ${(error as Error).message}`);
        void vscode.window.showErrorMessage(`Perennial: ${(error as Error).message}`, 'Show Log').then((choice) => {
          if (choice) backends.log.show();
        });
        return undefined;
      }
    },
  });
  return vscode.Disposable.from(
    changed,
    provider,
    backends.onDidChange(() => changed.fire()),
    defaults.onDidChange(() => changed.fire()),
  );
}

/**
 * VS Code keeps a server it started for as long as the definition it lists compares equal to the
 * one it held when it started it, and it holds the listing of that moment, which can be older than
 * the settings `resolveMcpServerDefinition` reads. The version names the settings' generation, so
 * that no listing equals one of earlier settings: switching to ForeverVM and back within VS Code's
 * half-second debounce once left the ForeverVM server answering every later call.
 */
function version(backends: Backends, defaults: MachineDefaults): string {
  return `${VERSION}+settings.${backends.generation}.${defaults.generation}`;
}

/**
 * The query that makes the machines Copilot creates as the settings and the Python extension say
 * (`McpConnectionQuery`), whoever started the server.
 */
async function machineQuery(defaults: MachineDefaults): Promise<string> {
  const { engine, python, network } = await defaults.forAgents();
  const query = new URLSearchParams({ engine, network: String(network ?? false) });
  if (python) query.set('python', python);
  return query.toString();
}

async function definition(backends: Backends, defaults: MachineDefaults, cliPath: string, resolving: boolean): Promise<vscode.McpServerDefinition> {
  if (backends.active === 'forevervm') {
    const token = await backends.token();
    if (resolving) {
      const account = await checkedAccount(await backends.hostedClient(), {
        refused: 'ForeverVM refused the token; run "Perennial: Set ForeverVM Token"',
        unreachable: (reason) => `cannot reach ForeverVM at ${backends.forevervmBaseUrl} (${reason}); check perennial.forevervm.baseUrl and the network`,
      });
      backends.log.info(`ForeverVM account ${account}`);
    }
    const env = { ELECTRON_RUN_AS_NODE: '1', FOREVERVM_BASE_URL: backends.forevervmBaseUrl, ...(token ? { FOREVERVM_TOKEN: token } : {}) };
    return new vscode.McpStdioServerDefinition(
      MCP_SERVER_LABEL,
      process.execPath,
      [cliPath, 'mcp', '--backend', 'forevervm'],
      env,
      version(backends, defaults),
    );
  }
  if (backends.active === 'team') {
    const url = backends.teamUrl;
    if (!url && resolving) throw new Error('perennial.backend is team, but no team server is set; run "Perennial: Sign In to a Team Server"');
    const key = await backends.teamKey();
    if (resolving && key) {
      const person = await checkedAccount(await backends.teamClient(), {
        refused: `${url} refused your key; run "Perennial: Sign In to a Team Server"`,
        unreachable: (reason) => `cannot reach the team server ${url} (${reason}); check perennial.team.url and the network`,
      });
      backends.log.info(`team server ${url}: signed in as ${person}`);
    }
    // People make sandbox machines only there; the network is as this computer's settings say.
    const query = new URLSearchParams({ engine: CONFINED_ENGINE, network: String((await defaults.forAgents()).network ?? false) });
    return new vscode.McpHttpServerDefinition(
      MCP_SERVER_LABEL,
      // Listed before a server is set: an address that is never connected to, as the local one's.
      vscode.Uri.parse(`${url ?? 'http://127.0.0.1'}/mcp?${query}`),
      key ? { Authorization: `Bearer ${key}` } : {},
      version(backends, defaults),
    );
  }
  // Listing must not start a server; resolving (just before VS Code connects) does.
  const server = resolving ? await backends.localServer() : await runningServer(backends.dataDir);
  const url = vscode.Uri.parse(`${server?.url ?? 'http://127.0.0.1'}/mcp?${await machineQuery(defaults)}`);
  return new vscode.McpHttpServerDefinition(MCP_SERVER_LABEL, url, server ? { Authorization: `Bearer ${server.token}` } : {}, version(backends, defaults));
}
