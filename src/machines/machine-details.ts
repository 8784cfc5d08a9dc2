import type { EngineSet } from '../engines/index.ts';
import type { MachineInfo } from '../shared/types.ts';
import type { Machine } from './machine.ts';
import type { MachineHome } from './machine-home.ts';

/**
 * What callers are told of machines: each one's details, with what its engine warns of and the
 * runtime an upgrade would move it to; listings by tag, newest first, with (in a cluster) the
 * machines other nodes run, as the home last had them.
 */
export class MachineDetails {
  constructor(private readonly engines: EngineSet) {}

  of(machine: Machine, engineWarnings = this.#engineWarnings()): MachineInfo {
    const info = machine.info();
    const warning = engineWarnings.get(info.engine);
    if (warning) info.warnings = [warning, ...info.warnings];
    const newest = info.engine === 'forevervm' ? undefined : this.engines.newestRuntime(info.engine);
    if (newest && info.runtime && info.runtime.pyodide !== newest.pyodide) info.upgradeTo = newest;
    return info;
  }

  /** The machines carrying every tag of `tags`, newest first. */
  list(machines: Iterable<Machine>, tags: Record<string, string>): MachineInfo[] {
    const warnings = this.#engineWarnings();
    return newestFirst([...machines].filter((m) => carries(m.manifest.tags, tags)).map((m) => this.of(m, warnings)));
  }

  /** `here`'s listing with the machines `home` knows elsewhere, each (in a cluster) with the node that runs it. */
  async everywhere(here: Map<string, Machine>, home: MachineHome, tags: Record<string, string>): Promise<MachineInfo[]> {
    const remote = (await home.elsewhere()).filter((info) => !here.has(info.name) && carries(info.tags, tags));
    const own = this.list(here.values(), tags).map((info) => (home.url ? { ...info, node: home.url } : info));
    return newestFirst([...own, ...remote]);
  }

  /** What every machine of an engine should know, by engine. */
  #engineWarnings(): Map<string, string> {
    return new Map(this.engines.status().flatMap((e) => (e.warning ? [[e.name, e.warning] as const] : [])));
  }
}

function carries(tags: Record<string, string>, wanted: Record<string, string>): boolean {
  return Object.entries(wanted).every(([k, v]) => tags[k] === v);
}

/** ISO times and names compare by their characters. */
function newestFirst(infos: MachineInfo[]): MachineInfo[] {
  const descending = (a: string, b: string) => (a < b ? 1 : a > b ? -1 : 0);
  return infos.sort((a, b) => descending(a.createdAt, b.createdAt) || descending(a.name, b.name));
}
