import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { importedMemoryMinimum } from '../../src/engines/sandbox/child/wasm-imports.ts';

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

describe('wasm import section reader', () => {
  it("reads env.memory's minimum past imports of every kind", () => {
    const wasm = binary(
      [...name('env'), ...name('f'), 0, 0], // function
      [...name('env'), ...name('table'), 1, 0x70, 1, ...leb(10), ...leb(20)], // table with a maximum
      [...name('env'), ...name('g'), 3, 0x7f, 0], // global
      [...name('env'), ...name('tag'), 4, 0, 0], // tag
      memoryImport('other', 'memory', 3, 5), // a memory of another module, with a maximum
      memoryImport('env', 'memory', 300),
    );
    assert.equal(importedMemoryMinimum(wasm), 300 * 65536);
  });

  it('says so when there is no env.memory, or the binary is cut short or unknown', () => {
    assert.throws(() => importedMemoryMinimum(binary(memoryImport('other', 'memory', 1))), /imports no env.memory/);
    assert.throws(() => importedMemoryMinimum(new Uint8Array(HEADER)), /imports no env.memory/);
    assert.throws(() => importedMemoryMinimum(binary([...name('env'), ...name('x'), 9])), /unknown import kind 9/);
    assert.throws(() => importedMemoryMinimum(new Uint8Array([...HEADER, 2, 0x80])), /ends inside a number/);
  });

  it("reads Pyodide's own binary", () => {
    const pyodide = dirname(createRequire(import.meta.url).resolve('pyodide/package.json'));
    const minimum = importedMemoryMinimum(readFileSync(join(pyodide, 'pyodide.asm.wasm')));
    assert.ok(minimum >= 16 * 1024 * 1024 && minimum % 65536 === 0, `a plausible initial memory: ${minimum}`);
  });
});
