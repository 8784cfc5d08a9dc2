/** The wasm binary format's import section, and the kinds of import it lists. */
const IMPORT_SECTION = 2;
const KIND = { function: 0, table: 1, memory: 2, global: 3, tag: 4 } as const;
const WASM_PAGE = 65536;

/**
 * The initial memory, in bytes, that a wasm binary's `env.memory` import asks for: read from the
 * import section without compiling the module.
 */
export function importedMemoryMinimum(wasm: Uint8Array): number {
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
    if (section !== IMPORT_SECTION) {
      at += size;
      continue;
    }
    for (let count = leb(); count > 0; count--) {
      const module = name();
      const field = name();
      const kind = wasm[at++]!;
      if (kind === KIND.function) leb(); // type index
      else if (kind === KIND.table) {
        at++; // element type, then limits
        if (leb() & 1) leb();
        leb();
      } else if (kind === KIND.memory) {
        const flags = leb();
        const minimum = leb();
        if (module === 'env' && field === 'memory') return minimum * WASM_PAGE;
        if (flags & 1) leb();
      } else if (kind === KIND.global) at += 2; // type, mutability
      else if (kind === KIND.tag) {
        at++; // attribute, then type index
        leb();
      } else throw new Error(`unknown import kind ${kind}`);
    }
    break;
  }
  throw new Error('the wasm binary imports no env.memory');
}
