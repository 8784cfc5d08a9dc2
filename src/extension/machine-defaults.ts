import { engineDescriptor, ENGINE_NAMES } from '../engines/descriptors.ts';
import * as vscode from 'vscode';
import type { EngineName, NewMachineOptions } from '../shared/requests.ts';

/** The part of the Python extension's API (`@vscode/python-extension`) read here. */
interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

/**
 * What new machines are made with, as the settings and the Python extension say: the engine, the
 * python engine's interpreter, the sandbox's workspace and network. The commands, the notebook
 * kernel and the MCP server definition (the machines Copilot makes) all take them from here, and
 * `onDidChange` fires when any of them changes.
 */
export class MachineDefaults implements vscode.Disposable {
  readonly #changed = new vscode.EventEmitter<void>();
  readonly onDidChange = this.#changed.event;
  readonly #subscriptions: vscode.Disposable[];
  #watchingPython = false;
  #changes = 0;

  constructor() {
    this.#subscriptions = [
      this.#changed,
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (['perennial.defaultEngine', 'perennial.pythonPath', 'perennial.sandbox'].some((section) => event.affectsConfiguration(section))) this.#change();
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.#change()),
    ];
  }

  /** How many times the defaults changed in this window. */
  get generation(): number {
    return this.#changes;
  }

  /** `perennial.defaultEngine`. */
  get engine(): EngineName {
    return configuredEngine() ?? ENGINE_NAMES[0];
  }

  /** For a machine of `engine` (the default engine when none). */
  async of(engine: EngineName = this.engine): Promise<NewMachineOptions> {
    const { takes } = engineDescriptor(engine);
    return { engine, ...(takes.python ? await this.#python() : {}), ...machineSettings(takes) };
  }

  /**
   * For the machines an agent creates, of either engine: the engine, the interpreter and the
   * network, not the workspace (mounted, it is a sandbox's working folder, read-only by default,
   * where an agent could write no file).
   */
  async forAgents(): Promise<Pick<NewMachineOptions, 'python' | 'network'> & { engine: EngineName }> {
    return { engine: this.engine, ...(await this.#python()), network: machineSettings({ network: true, workspace: false }).network };
  }

  /** `perennial.pythonPath`, else the Python extension's interpreter for this workspace, else none: the server finds one as its system has it. */
  async #python(): Promise<Pick<NewMachineOptions, 'python'>> {
    const configured = vscode.workspace.getConfiguration('perennial').get<string>('pythonPath');
    if (configured) return { python: configured };
    try {
      const extension = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
      const api = extension && (extension.isActive ? extension.exports : await extension.activate());
      if (api && !this.#watchingPython) {
        this.#watchingPython = true;
        this.#subscriptions.push(api.environments.onDidChangeActiveEnvironmentPath(() => this.#change()));
      }
      const active = api?.environments.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
      if (active?.path) return { python: active.path };
    } catch {
      // The Python extension is missing or has no interpreter selected.
    }
    return {};
  }

  #change(): void {
    this.#changes++;
    this.#changed.fire();
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
  }
}

/** The sandbox's network and workspace access, from the settings. */
/** The settings of new machines (`perennial.sandbox.*`, as the engine that first took them): those an engine `takes`. */
function machineSettings(takes: { network: boolean; workspace: boolean }): Pick<NewMachineOptions, 'network' | 'workspace' | 'workspaceWritable'> {
  const settings = vscode.workspace.getConfiguration('perennial.sandbox');
  const access = settings.get<string>('workspaceAccess', 'read');
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  return {
    ...(takes.network ? { network: settings.get<boolean>('network', false) } : {}),
    ...(takes.workspace && access !== 'none' && folder?.scheme === 'file' ? { workspace: folder.fsPath, workspaceWritable: access === 'readwrite' } : {}),
  };
}

/** `perennial.defaultEngine`, when it names an engine. */
export function configuredEngine(): EngineName | undefined {
  const engine = vscode.workspace.getConfiguration('perennial').get<string>('defaultEngine');
  return ENGINE_NAMES.find((name) => name === engine);
}
