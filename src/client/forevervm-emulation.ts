import { tagsOf, type EmulatedOperation, type OperationInput, type OperationResult } from '../shared/operations.ts';
import { UnsupportedByBackendError } from '../shared/perennial-client.ts';
import { base64Content } from '../shared/requests.ts';
import type { Completeness, ExecResult, ForeverVMMachine, HistoryEntry, MachineInfo } from '../shared/types.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { ForeverVMClient } from './forevervm-client.ts';

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
  // As the kernel's `reset`, but the hosted kernel's own modules are not known here: names only.
  reset: `import json as __j
__c = [__k for __k in list(globals()) if not (__k.startswith("__") and __k.endswith("__"))]
print(__j.dumps({"cleared": len([__k for __k in __c if __k not in ("__j", "__c")])}))
[globals().pop(__k, None) for __k in __c + ["__j", "__c"]]`,
  // As the kernel's `inspect`: a dotted name followed without calling anything.
  inspect: (expression: string) => `import json as __j, inspect as __i, builtins as __bi
__n = ${JSON.stringify(expression)}.strip().split(".")
if not all(__p.isidentifier() for __p in __n): raise ValueError("not a dotted name: " + ${JSON.stringify(JSON.stringify(expression))})
if __n[0] in globals(): __v = globals()[__n[0]]
elif hasattr(__bi, __n[0]): __v = getattr(__bi, __n[0])
else: raise NameError(f"name {__n[0]!r} is not defined")
for __p in __n[1:]:
    __v = __i.getattr_static(__v, __p)
    __v = __v.__func__ if isinstance(__v, (staticmethod, classmethod)) else __v
try:
    __s = str(__i.signature(__v))
except (TypeError, ValueError):
    __s = None
__t = type(__v)
print(__j.dumps({"name": ${JSON.stringify(expression)}, "type": __t.__qualname__ if __t.__module__ in ("builtins", "__main__") else __t.__module__ + "." + __t.__qualname__, "signature": __s, "doc": __i.getdoc(__v)}))
[globals().pop(__k, None) for __k in ("__j", "__i", "__bi", "__n", "__v", "__s", "__t", "__p")]`,
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

/** What a backend without an operation does instead: for exactly the operations the table says it can. */
export type HostedOperations = { [K in EmulatedOperation]: (request: OperationInput<K>) => Promise<OperationResult<K>> };

/**
 * Perennial's extensions for a backend that has only the ForeverVM protocol (hosted ForeverVM):
 * the same answers from a short instruction on the machine, from the protocol's own calls, from
 * this client's own record of the instructions it ran, or from a judgement made here. The
 * operations not in `operations` it cannot do.
 */
export class ForeverVMEmulation {
  readonly #record = new Map<string, HistoryEntry[]>();
  readonly operations: HostedOperations;

  constructor(private readonly wire: ForeverVMClient) {
    this.operations = {
      list: async ({ tag }) => {
        const [first, ...rest] = await wire.listMachines(tag?.length ? tagsOf(tag) : undefined);
        if (!first) return [];
        // A server of an older Perennial has each machine's details, only not the listing of them all.
        const details = (machine: ForeverVMMachine) => wire.get(machine.name);
        const head = await details(first).catch((error: unknown) => (error instanceof UnsupportedByBackendError ? undefined : fromListing(first)));
        if (!head) return [first, ...rest].map(fromListing);
        return [head, ...(await Promise.all(rest.map((machine) => details(machine).catch(() => fromListing(machine)))))];
      },
      get: async ({ name }) => {
        const listed = (await wire.listMachines()).find((machine) => machine.name === name);
        if (!listed) throw new ForeverVMError(404, 'MachineNotFound', `Machine ${name} does not exist`, name);
        return fromListing(listed);
      },
      interrupt: async ({ name }) => {
        // ForeverVM's own way: an instruction that interrupts whatever runs before it.
        const { interrupted } = await wire.exec(name, 'pass', { interrupt: true });
        return { cancelled: 0, interrupted: interrupted ?? false };
      },
      history: async ({ name, last }) => {
        const entries = this.#record.get(name) ?? [];
        return last ? entries.slice(-Number(last)) : entries;
      },
      variables: ({ name }) => this.#answer(name, SNIPPETS.variables),
      variable: ({ name, variable }) => this.#answer(name, SNIPPETS.variable(variable)),
      reset: ({ name }) => this.#answer(name, SNIPPETS.reset),
      inspect: ({ name, expression }) => this.#answer(name, SNIPPETS.inspect(expression)),
      listFiles: ({ name, path }) => this.#answer(name, SNIPPETS.listFiles(path ?? '')),
      readFile: ({ name, path }) => this.#answer(name, SNIPPETS.readFile(path)),
      writeFile: ({ name, path, content, encoding }) => this.#answer(name, SNIPPETS.writeFile(path, base64Content(content, encoding ?? 'utf8'))),
      isComplete: async ({ code }) => this.isComplete(code),
    };
  }

  /** Keeps an instruction this client ran, for `history`. */
  record(machine: string, entry: HistoryEntry): void {
    const entries = this.#record.get(machine) ?? [];
    entries.push(entry);
    this.#record.set(machine, entries.slice(-RECORDED_INSTRUCTIONS));
  }

  /** Stops recording: the backend keeps a history of its own. */
  forgetRecords(): void {
    this.#record.clear();
  }

  /**
   * Without the kernel's judgement: a block opener or an open bracket asks for more, and a block
   * ends at an empty line, as in Python's own prompt.
   */
  isComplete(code: string): Completeness {
    const lines = code.split('\n');
    const last = lines.at(-1) ?? '';
    if (lines.length > 1 && last.trim() === '') return 'complete';
    const depth = [...code].reduce((d, c) => d + ('([{'.includes(c) ? 1 : ')]}'.includes(c) ? -1 : 0), 0);
    if (depth > 0 || /[:\\]\s*$/.test(last)) return 'incomplete';
    return lines.length > 1 ? 'incomplete' : 'complete';
  }

  /** Runs a snippet and reads the JSON line it prints. */
  async #answer<T>(machine: string, code: string): Promise<T> {
    const lines: string[] = [];
    const { instruction_seq: seq } = await this.wire.exec(machine, code, { timeoutSeconds: 30 });
    const result: ExecResult = await this.wire.streamResult(machine, seq, (chunk) => {
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

/** What hosted ForeverVM's listing tells of a machine, as Perennial's details. */
export function fromListing(machine: ForeverVMMachine): MachineInfo {
  return {
    name: machine.name,
    createdAt: machine.created_at,
    tags: machine.tags,
    engine: 'forevervm',
    runtime: null,
    upgradeTo: null,
    memoryMb: 0,
    state: machine.running ? (machine.has_pending_instruction ? 'busy' : 'warm') : 'swapped',
    nextSeq: 0,
    pendingInstructions: machine.has_pending_instruction ? 1 : 0,
    lastUsedAt: machine.created_at,
    snapshot: null,
    warnings: [],
  };
}
