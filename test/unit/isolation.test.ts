import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { detectIsolation, permissionFlags, sandboxEnv } from '../../src/engines/sandbox/isolation.ts';

describe('sandbox isolation without bubblewrap', () => {
  for (const [platform, system] of [
    ['darwin', 'macOS'],
    ['win32', 'Windows'],
  ] as const) {
    it(`on ${system}: says there is none there, and what confines a machine instead`, () => {
      const isolation = detectIsolation({}, platform);
      assert.equal(isolation.bubblewrap, false);
      assert.match(isolation.warning ?? '', new RegExp(`^there is no bubblewrap on ${system}: `));
      assert.match(isolation.warning ?? '', /Node's permission model \(files, processes, addons\) and have no network unless made with it/);
      assert.doesNotMatch(isolation.warning ?? '', /not installed/);
    });
  }

  it('on Linux, turned off: says so, and the same of what remains', () => {
    const isolation = detectIsolation({ PERENNIAL_SANDBOX_BUBBLEWRAP: 'off' }, 'linux');
    assert.equal(isolation.bubblewrap, false);
    assert.match(isolation.warning ?? '', /^bubblewrap is turned off \(PERENNIAL_SANDBOX_BUBBLEWRAP=off\): .*no network unless made with it/);
  });
});

describe("the permission model's flags", () => {
  const node24 = new Set(['--permission', '--allow-worker', '--allow-fs-read']);
  const node26 = new Set([...node24, '--allow-net']);
  it('give the network only to a machine made with it, where the model covers the network (Node 25 on)', () => {
    assert.deepEqual(permissionFlags(true, node26), ['--permission', '--allow-net']);
    assert.deepEqual(permissionFlags(false, node26), ['--permission']);
    // Before Node 25 the model has no network to give: the machine's network is bubblewrap's and the process's own.
    assert.deepEqual(permissionFlags(true, node24), ['--permission']);
  });

  it('name the model as the Node at hand knows it, which starts with them', () => {
    assert.deepEqual(permissionFlags(false, new Set(['--experimental-permission'])), ['--experimental-permission']);
    for (const network of [false, true]) {
      const started = spawnSync(process.execPath, [...permissionFlags(network), '--no-warnings', '-e', 'process.exit(process.permission ? 0 : 3)'], {
        encoding: 'utf8',
      });
      assert.equal(started.status, 0, started.stderr);
    }
  });
});

describe("a sandbox process's environment", () => {
  it('holds nothing of the host but a fixed PATH and the allocator settings', () => {
    assert.deepEqual(Object.keys(sandboxEnv(false)).sort(), [
      'MALLOC_ARENA_MAX',
      'MALLOC_MMAP_THRESHOLD_',
      'MALLOC_TOP_PAD_',
      'MALLOC_TRIM_THRESHOLD_',
      'PATH',
    ]);
  });

  it("runs Electron's executable as Node, where the server runs on Electron (VS Code's)", () => {
    assert.equal(sandboxEnv(true).ELECTRON_RUN_AS_NODE, '1');
  });
});
