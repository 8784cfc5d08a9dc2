import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mountPoint } from '../../src/engines/sandbox/mount-point.ts';

describe('where a sandbox machine mounts the folder it works in', () => {
  it('at the same path on Linux and macOS, so that paths printed in the machine name the same files on the host', () => {
    assert.equal(mountPoint('/home/ada/work', 'linux'), '/home/ada/work');
    assert.equal(mountPoint('/Users/ada/My Notebooks/', 'darwin'), '/Users/ada/My Notebooks');
    assert.equal(mountPoint('/tmp/project', 'linux'), '/tmp/project');
  });

  it("at /workspace where the host's path would cover Pyodide's own files, or is the root", () => {
    for (const path of ['/', '/tmp', '/lib', '/lib/python3.12/x', '/home/pyodide', '/home/pyodide/work', '/dev/shm', '/proc', '/usr/share/x'])
      assert.equal(mountPoint(path, 'linux'), '/workspace', path);
    assert.equal(mountPoint('/library/notes', 'linux'), '/library/notes', 'a name that only starts like one of them');
  });

  it('a Windows folder as MSYS writes it; a share without a drive letter at /workspace', () => {
    assert.equal(mountPoint('C:\\Users\\Ada\\Notebooks', 'win32'), '/c/Users/Ada/Notebooks');
    assert.equal(mountPoint('d:\\', 'win32'), '/d');
    assert.equal(mountPoint('\\\\server\\share\\notes', 'win32'), '/workspace');
  });
});
