import { engineDescriptor, ENGINE_NAMES, PERSONS_ENGINE } from '../engines/descriptors.ts';
import { commandOnPath } from '../platform/command-on-path.ts';
import { pythonCommands } from '../platform/python-commands.ts';
import * as vscode from 'vscode';
import type { EngineName, NewMachineOptions } from '../shared/requests.ts';

/** The part of the Python extension's API (`@vscode/python-extension`) read here. */
interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
    /** The environments it found on the computer. */
    readonly known: ReadonlyArray<{ path: string; environment?: { name?: string }; version?: { major?: number; minor?: number; micro?: number } }>;
  };
}

/** An interpreter a python machine may run on, as a person picks it. */
export interface KnownInterpreter {
  path: string;
  /** Where it was found: the setting, the Python extension, the PATH. */
  detail: string;
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
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.#change()),
    ];
  }

  /** How many times the defaults changed in this window. */
  get generation(): number {
    return this.#changes;
  }

  /** `perennial.defaultEngine`: the engine of the machines an agent makes, and of any made without a person's choice. */
  get engine(): EngineName {
    return configuredEngine() ?? ENGINE_NAMES[0];
  }

  /**
   * The engine of a person's notebooks and Run Selection: `perennial.defaultEngine` where the
   * person set it; else, in a trusted workspace, their own Python (the Python extension's
   * interpreter); else the sandbox, as in a workspace whose code is not trusted.
   */
  get personsEngine(): EngineName {
    return configuredEngine(true) ?? (vscode.workspace.isTrusted ? PERSONS_ENGINE : ENGINE_NAMES[0]);
  }

  /**
   * For a machine of `engine` (the default engine when none); one that works in `workdir` (a
   * notebook's folder, the file's workspace) is not given the sandbox's workspace besides.
   */
  async of(engine: EngineName = this.engine, workdir?: string): Promise<NewMachineOptions> {
    const { takes } = engineDescriptor(engine);
    return {
      engine,
      ...(takes.python ? await this.#python() : {}),
      ...machineSettings(workdir ? { ...takes, workspace: false } : takes),
      ...(workdir ? { workdir } : {}),
    };
  }

  /**
   * The interpreters a person may pick for a python machine, the default first: `perennial.pythonPath`,
   * the Python extension's for this workspace and those it found, then the PATH's.
   */
  async interpreters(): Promise<KnownInterpreter[]> {
    const found: KnownInterpreter[] = [];
    const add = (path: string | undefined, detail: string) => path && !found.some((known) => known.path === path) && found.push({ path, detail });
    add(vscode.workspace.getConfiguration('perennial').get<string>('pythonPath'), 'perennial.pythonPath');
    const api = await this.#pythonApi();
    add(api?.environments.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri).path, "the Python extension's, for this workspace");
    for (const environment of api?.environments.known ?? []) {
      const { major, minor, micro } = environment.version ?? {};
      const version = major === undefined ? '' : `Python ${[major, minor, micro].filter((n) => n !== undefined).join('.')}`;
      add(environment.path, [version, environment.environment?.name, 'found by the Python extension'].filter(Boolean).join(' · '));
    }
    for (const [command] of pythonCommands()) add(commandOnPath(command!), `${command} on the PATH`);
    return found;
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
      const active = (await this.#pythonApi())?.environments.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
      if (active?.path) return { python: active.path };
    } catch {
      // The Python extension has no interpreter selected.
    }
    return {};
  }

  /** The Python extension's API, when it is installed; its interpreter's changes are this object's. */
  async #pythonApi(): Promise<PythonExtensionApi | undefined> {
    try {
      const extension = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
      const api = extension && (extension.isActive ? extension.exports : await extension.activate());
      if (api && !this.#watchingPython) {
        this.#watchingPython = true;
        this.#subscriptions.push(api.environments.onDidChangeActiveEnvironmentPath(() => this.#change()));
      }
      return api;
    } catch {
      // It failed to start: as if it were missing.
      return undefined;
    }
  }

  #change(): void {
    this.#changes++;
    this.#changed.fire();
  }

  dispose(): void {
    for (const subscription of this.#subscriptions) subscription.dispose();
  }
}

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

/** `perennial.defaultEngine`, when it names an engine; `set`: only where the person set it (its default aside). */
export function configuredEngine(set = false): EngineName | undefined {
  const setting = vscode.workspace.getConfiguration('perennial');
  const given = setting.inspect<string>('defaultEngine');
  const engine = set ? (given?.workspaceFolderValue ?? given?.workspaceValue ?? given?.globalValue) : setting.get<string>('defaultEngine');
  return ENGINE_NAMES.find((name) => name === engine);
}
