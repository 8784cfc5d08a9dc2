import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { recordDynlibs, type EmscriptenModule } from '../../src/engines/sandbox/child/dynlibs.ts';

/** A module whose C heap holds `struct dso` records at the given handles. */
function fakeModule(
  libs: Record<string, Array<{ handle: number; loaded: boolean; flags?: number; mem?: [number, number]; table?: [number, number] }>>,
): EmscriptenModule {
  const buffer = new ArrayBuffer(4096);
  const module = {
    HEAP8: new Int8Array(buffer),
    HEAPU8: new Uint8Array(buffer),
    HEAP32: new Int32Array(buffer),
    HEAPU32: new Uint32Array(buffer),
    LDSO: { loadedLibsByName: { __main__: {} } as Record<string, { global?: boolean }>, loadedLibsByHandle: {} as Record<number, unknown> },
  } as unknown as EmscriptenModule;
  for (const [name, handles] of Object.entries(libs)) {
    const dso = { global: name.includes('global') };
    module.LDSO.loadedLibsByName[name] = dso;
    for (const h of handles) {
      module.LDSO.loadedLibsByHandle[h.handle] = dso;
      module.HEAP8[h.handle + 8] = h.loaded ? 1 : 0;
      module.HEAP32[(h.handle + 4) >> 2] = h.flags ?? 0;
      module.HEAPU32[(h.handle + 12) >> 2] = h.mem?.[0] ?? 0;
      module.HEAP32[(h.handle + 16) >> 2] = h.mem?.[1] ?? 0;
      module.HEAPU32[(h.handle + 20) >> 2] = h.table?.[0] ?? 0;
      module.HEAP32[(h.handle + 24) >> 2] = h.table?.[1] ?? 0;
    }
  }
  return module;
}

describe('recordDynlibs', () => {
  it('records libraries in load order with the bases Emscripten wrote into their struct dso', () => {
    const module = fakeModule({
      '/lib/python3.13/site-packages/numpy/_core/_multiarray_umath.so': [
        { handle: 256, loaded: true, flags: 4096 | 2, mem: [1_048_576, 65_536], table: [11_803, 512] },
      ],
      '/usr/lib/libopenblas-global.so': [
        { handle: 512, loaded: false },
        { handle: 768, loaded: true, mem: [2_097_152, 4096], table: [12_315, 8] },
      ],
    });
    assert.deepEqual(recordDynlibs(module), [
      {
        name: '/lib/python3.13/site-packages/numpy/_core/_multiarray_umath.so',
        handles: [256],
        flags: 4098,
        memBase: 1_048_576,
        memSize: 65_536,
        tableBase: 11_803,
        tableSize: 512,
        global: false,
      },
      // Every handle is kept (the C side may refer to any), the bases come from the loaded one.
      {
        name: '/usr/lib/libopenblas-global.so',
        handles: [512, 768],
        flags: 0,
        memBase: 2_097_152,
        memSize: 4096,
        tableBase: 12_315,
        tableSize: 8,
        global: true,
      },
    ]);
  });

  it('records nothing for a machine without side modules', () => {
    assert.deepEqual(recordDynlibs(fakeModule({})), []);
  });

  it('refuses a library loaded only as a dependency: its place in memory is unknown', () => {
    const module = fakeModule({ '/usr/lib/libdep.so': [{ handle: 256, loaded: false }] });
    assert.throws(() => recordDynlibs(module), /libdep\.so was loaded without a handle/);
  });
});
