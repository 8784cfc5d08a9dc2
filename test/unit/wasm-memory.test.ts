import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pyodideDir, pyodideRuntimes } from '../../src/engines/sandbox/pyodide-runtimes.ts';
import { describe, it } from 'node:test';
import { initialMemoryBytes } from '../../src/engines/sandbox/child/wasm-memory.ts';

const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
const leb = (value: number): number[] => {
  const bytes: number[] = [];
  do {
    let byte = value & 0x7f;
    value = Math.floor(value / 128);
    if (value) byte |= 0x80;
    bytes.push(byte);
  } while (value);
  return bytes;
};
const name = (text: string) => [...leb(text.length), ...Buffer.from(text)];
const section = (id: number, body: number[]) => [id, ...leb(body.length), ...body];
/** A binary with a type section, then an import section with `imports` (each one entry's bytes). */
const binary = (...imports: number[][]) =>
  new Uint8Array([...HEADER, ...section(1, [1, 0x60, 0, 0]), ...section(2, [...leb(imports.length), ...imports.flat()])]);
const memoryImport = (module: string, field: string, minimum: number, maximum?: number) => [
  ...name(module),
  ...name(field),
  2,
  maximum === undefined ? 0 : 1,
  ...leb(minimum),
  ...(maximum === undefined ? [] : leb(maximum)),
];

describe("a wasm binary's initial memory", () => {
  it("reads env.memory's minimum past imports of every kind", () => {
    const wasm = binary(
      [...name('env'), ...name('f'), 0, 0], // function
      [...name('env'), ...name('table'), 1, 0x70, 1, ...leb(10), ...leb(20)], // table with a maximum
      [...name('env'), ...name('g'), 3, 0x7f, 0], // global
      [...name('env'), ...name('tag'), 4, 0, 0], // tag
      memoryImport('other', 'memory', 3, 5), // a memory of another module, with a maximum
      memoryImport('env', 'memory', 300),
    );
    assert.equal(initialMemoryBytes(wasm), 300 * 65536);
  });

  it('reads the memory a binary defines itself when it imports none (Pyodide 314)', () => {
    const own = (minimum: number) => section(5, [1, 0, ...leb(minimum)]);
    assert.equal(initialMemoryBytes(new Uint8Array([...binary(memoryImport('other', 'memory', 1)), ...own(400)])), 400 * 65536);
    assert.equal(
      initialMemoryBytes(new Uint8Array([...HEADER, ...section(5, [0]), ...section(1, [1, 0x60, 0, 0]), ...own(7)])),
      7 * 65536,
      'past an empty memory section',
    );
  });

  it('says so when there is no memory, or the binary is cut short or unknown', () => {
    assert.throws(() => initialMemoryBytes(binary(memoryImport('other', 'memory', 1))), /has no memory/);
    assert.throws(() => initialMemoryBytes(new Uint8Array(HEADER)), /has no memory/);
    assert.throws(() => initialMemoryBytes(binary([...name('env'), ...name('x'), 9])), /unknown import kind 9/);
    assert.throws(() => initialMemoryBytes(new Uint8Array([...HEADER, 2, 0x80])), /ends inside a number/);
  });

  for (const runtime of pyodideRuntimes()) {
    it(`reads the binary of Pyodide ${runtime.version}`, () => {
      const minimum = initialMemoryBytes(readFileSync(join(pyodideDir(runtime), 'pyodide.asm.wasm')));
      assert.ok(minimum >= 16 * 1024 * 1024 && minimum % 65536 === 0, `a plausible initial memory: ${minimum}`);
    });
  }
});
