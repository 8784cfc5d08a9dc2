/** The wasm binary format's import and memory sections, and the kinds of import it lists. */
const IMPORT_SECTION = 2;
const MEMORY_SECTION = 5;
const KIND = { function: 0, table: 1, memory: 2, global: 3, tag: 4 } as const;
const WASM_PAGE = 65536;

/**
 * The initial memory, in bytes, of a wasm binary's memory: the `env.memory` it imports (Pyodide up
 * to 0.29), or else the first it defines itself (314 and later). Read without compiling the module.
 */
export function initialMemoryBytes(wasm: Uint8Array): number {
  let at = 8; // past the magic number and the version
  const leb = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= wasm.length) throw new Error('the wasm binary ends inside a number');
      const byte = wasm[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  const name = (): string => {
    const length = leb();
    at += length;
    return new TextDecoder().decode(wasm.subarray(at - length, at));
  };
  while (at < wasm.length) {
    const section = wasm[at++]!;
    const size = leb();
    if (section === MEMORY_SECTION) {
      const end = at + size;
      if (leb() > 0) {
        leb(); // flags
        return leb() * WASM_PAGE;
      }
      at = end;
      continue;
    }
    if (section !== IMPORT_SECTION) {
      at += size;
      continue;
    }
    for (let count = leb(); count > 0; count--) {
      const module = name();
      const field = name();
      const kind = wasm[at++]!;
      if (kind === KIND.function)
        leb(); // type index
      else if (kind === KIND.table) {
        at++; // element type, then limits
        if (leb() & 1) leb();
        leb();
      } else if (kind === KIND.memory) {
        const flags = leb();
        const minimum = leb();
        if (module === 'env' && field === 'memory') return minimum * WASM_PAGE;
        if (flags & 1) leb();
      } else if (kind === KIND.global)
        at += 2; // type, mutability
      else if (kind === KIND.tag) {
        at++; // attribute, then type index
        leb();
      } else throw new Error(`unknown import kind ${kind}`);
    }
  }
  throw new Error('the wasm binary has no memory: it neither imports env.memory nor defines one');
}
