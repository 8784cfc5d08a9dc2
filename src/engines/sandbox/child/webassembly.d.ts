// The WebAssembly API the sandbox uses. TypeScript ships these types only with the DOM library,
// which would bring browser globals that Node does not have.
declare namespace WebAssembly {
  function compile(bytes: Uint8Array): Promise<Module>;
  function instantiate(module: Module, imports?: Record<string, Record<string, unknown>>): Promise<Instance>;
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
  class Memory {
    readonly buffer: ArrayBuffer;
    grow(pages: number): number;
  }
  class Table {
    readonly length: number;
    get(index: number): unknown;
    set(index: number, value: unknown): void;
    grow(delta: number): number;
  }
}
