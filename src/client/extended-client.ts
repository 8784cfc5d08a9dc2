import type { ExecResult, FileContent, FileListing, HistoryEntry, OutputChunk, VariableDetail, VariableSummary } from '../shared/types.ts';
import { ForeverVMError, UnsupportedByBackendError, type ForeverVMClient } from './forevervm-client.ts';

/** Instructions kept per machine for a backend without a history of its own. */
const RECORDED_INSTRUCTIONS = 200;

/** Python that prints one JSON line: the emulations read it from stdout, never from a repr. */
const SNIPPETS = {
  variables: `import json as __j
print(__j.dumps([{"name": __k, "type": type(__v).__name__, "repr": repr(__v)[:200]} for __k, __v in list(globals().items()) if not __k.startswith("_") and type(__v).__name__ != "module"]))
del __j`,
  variable: (name: string) => `import json as __j
print(__j.dumps({"name": ${JSON.stringify(name)}, "type": type(globals()[${JSON.stringify(name)}]).__name__, "repr": repr(globals()[${JSON.stringify(name)}])[:100000], "truncated": False}))
del __j`,
  listFiles: (path: string) => `import json as __j, os as __o
__p = __o.path.abspath(${JSON.stringify(path || '.')})
print(__j.dumps({"path": __p, "entries": sorted([{"name": __e.name, "type": "link" if __e.is_symlink() else "dir" if __e.is_dir() else "file", "size": __e.stat(follow_symlinks=False).st_size, "mtime": __e.stat(follow_symlinks=False).st_mtime} for __e in __o.scandir(__p)], key=lambda __x: (__x["type"] != "dir", __x["name"]))}))
del __j, __o, __p`,
  readFile: (path: string) => `import json as __j, base64 as __b, os as __o
__d = open(${JSON.stringify(path)}, "rb").read()
print(__j.dumps({"path": __o.path.abspath(${JSON.stringify(path)}), "size": len(__d), "content": __b.b64encode(__d).decode()}))
del __j, __b, __o, __d`,
  writeFile: (path: string, base64: string) => `import json as __j, base64 as __b, os as __o
__d = __b.b64decode(${JSON.stringify(base64)})
__o.makedirs(__o.path.dirname(__o.path.abspath(${JSON.stringify(path)})), exist_ok=True)
open(${JSON.stringify(path)}, "wb").write(__d)
print(__j.dumps({"path": __o.path.abspath(${JSON.stringify(path)}), "size": len(__d)}))
del __j, __b, __o, __d`,
};

/**
 * The client as the MCP tools use it: Perennial's extensions where the backend has them, and
 * where it does not (hosted ForeverVM), the same answers emulated with a short instruction on the
 * machine, or from this client's own record of the instructions it ran.
 */
export class ExtendedClient {
  readonly #record = new Map<string, HistoryEntry[]>();

  constructor(readonly client: ForeverVMClient) {}

  /** Runs code, streaming its output, and records it for `history` on backends without one. */
  async run(machine: string, code: string, onOutput: (chunk: OutputChunk) => void, timeoutSeconds?: number): Promise<{ seq: number; result: ExecResult }> {
    const { instruction_seq: seq } = await this.client.exec(machine, code, { timeoutSeconds });
    const startedAt = new Date().toISOString();
    const result = await this.client.streamResult(machine, seq, onOutput);
    const entries = this.#record.get(machine) ?? [];
    entries.push({ seq, code, startedAt, result });
    this.#record.set(machine, entries.slice(-RECORDED_INSTRUCTIONS));
    return { seq, result };
  }

  async interrupt(machine: string): Promise<unknown> {
    return this.#or(() => this.client.interrupt(machine), async () => {
      // ForeverVM's own way: an instruction that interrupts whatever runs before it.
      await this.client.exec(machine, 'pass', { interrupt: true });
      return { interrupted: true };
    });
  }

  variables(machine: string): Promise<VariableSummary[]> {
    return this.#or(() => this.client.variables(machine), () => this.#emulate<VariableSummary[]>(machine, SNIPPETS.variables));
  }

  variable(machine: string, name: string): Promise<VariableDetail> {
    return this.#or(() => this.client.variable(machine, name), () => this.#emulate<VariableDetail>(machine, SNIPPETS.variable(name)));
  }

  listFiles(machine: string, path: string): Promise<FileListing> {
    return this.#or(() => this.client.listFiles(machine, path), () => this.#emulate<FileListing>(machine, SNIPPETS.listFiles(path)));
  }

  readFile(machine: string, path: string): Promise<FileContent> {
    return this.#or(() => this.client.readFile(machine, path), () => this.#emulate<FileContent>(machine, SNIPPETS.readFile(path)));
  }

  writeFile(machine: string, path: string, content: string, encoding: 'utf8' | 'base64'): Promise<{ path: string; size: number }> {
    return this.#or(
      () => this.client.writeFile(machine, path, content, encoding),
      () => this.#emulate(machine, SNIPPETS.writeFile(path, encoding === 'utf8' ? Buffer.from(content, 'utf8').toString('base64') : content)),
    );
  }

  /** The backend's history, or the instructions this client ran on the machine. */
  history(machine: string, last?: number): Promise<HistoryEntry[]> {
    return this.#or(
      () => this.client.history(machine, last),
      async () => {
        const entries = this.#record.get(machine) ?? [];
        return last ? entries.slice(-last) : entries;
      },
    );
  }

  async #or<T>(native: () => Promise<T>, fallback: () => Promise<T>): Promise<T> {
    try {
      return await native();
    } catch (error) {
      if (error instanceof UnsupportedByBackendError) return fallback();
      throw error;
    }
  }

  async #emulate<T>(machine: string, code: string): Promise<T> {
    const lines: string[] = [];
    const { instruction_seq: seq } = await this.client.exec(machine, code, { timeoutSeconds: 30 });
    const result = await this.client.streamResult(machine, seq, (chunk) => {
      if (chunk.stream === 'stdout') lines.push(chunk.data);
    });
    if ('error' in result) throw new ForeverVMError(400, 'EmulationFailed', result.error.split('\n').at(-1) ?? result.error);
    try {
      return JSON.parse(lines.join('\n')) as T;
    } catch {
      throw new ForeverVMError(502, 'EmulationFailed', 'The machine did not answer as expected');
    }
  }
}
