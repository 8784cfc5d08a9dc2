import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { commandOnPath } from '../../src/platform/command-on-path.ts';

describe('a command on PATH', () => {
  const root = mkdtempSync(join(tmpdir(), 'perennial-path-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  const folder = (name: string, files: Record<string, number>) => {
    const dir = join(root, name);
    mkdirSync(dir);
    for (const [file, mode] of Object.entries(files)) {
      writeFileSync(join(dir, file), '');
      chmodSync(join(dir, file), mode);
    }
    return dir;
  };
  const notRunnable = folder('a', { perennial: 0o644 });
  const runnable = folder('b', { perennial: 0o755 });
  const windowsShim = folder('c', { 'perennial.cmd': 0o644 });
  const asFolder = folder('d', {});
  mkdirSync(join(asFolder, 'perennial'));

  it('is the first runnable file of its name, in PATH order, as a POSIX shell finds it', () => {
    assert.equal(commandOnPath('perennial', { PATH: [asFolder, notRunnable, runnable].join(':') }, 'linux'), join(runnable, 'perennial'));
    assert.equal(commandOnPath('perennial', { PATH: [asFolder, notRunnable].join(':') }, 'linux'), undefined);
    assert.equal(commandOnPath('perennial', {}, 'linux'), undefined);
  });

  it("is found with PATHEXT's extensions on Windows (whose file names ignore case; these are as written), whatever the variable's case", () => {
    assert.equal(commandOnPath('perennial', { Path: `${asFolder};${windowsShim}`, PATHEXT: '.exe;.cmd' }, 'win32'), join(windowsShim, 'perennial.cmd'));
    assert.equal(commandOnPath('perennial', { Path: asFolder, PATHEXT: '.exe;.cmd' }, 'win32'), undefined);
  });
});
