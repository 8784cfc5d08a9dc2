import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { nameAt } from '../../src/jupyter/introspection.ts';
import { nextLineIndent } from '../../src/shared/python-indent.ts';
import { BadMessageError, MessageCodec } from '../../src/jupyter/messages.ts';
import { contentOf, ExecuteRequest, InspectRequest } from '../../src/jupyter/requests.ts';
import { jupyterFolders } from '../../src/platform/jupyter-paths.ts';

describe('Jupyter protocol pieces', () => {
  it('signs messages with the connection key, and refuses one signed with another', () => {
    const ours = new MessageCodec('secret', 'hmac-sha256');
    const frames = ours.encode('execute_request', { code: '1' }, undefined, [Buffer.from('peer')]);
    const read = ours.decode(frames);
    assert.equal(read.header.msg_type, 'execute_request');
    assert.deepEqual(read.ids, [Buffer.from('peer')]);
    assert.deepEqual(read.content, { code: '1' });
    assert.throws(() => new MessageCodec('other', 'hmac-sha256').decode(frames), BadMessageError);
    assert.throws(() => ours.decode([Buffer.from('no delimiter')]), /no delimiter/);
    // An empty key signs nothing, and any signature is taken.
    assert.equal(new MessageCodec('', 'hmac-sha256').decode(frames).content.code, '1');
  });

  it("reads each request's content by its schema: ipykernel's defaults for what is left out, a clear error for what is wrong", () => {
    const request = (msg_type: string, content: Record<string, unknown>) => ({ header: { msg_type }, content }) as unknown as Parameters<typeof contentOf>[1];
    assert.deepEqual(contentOf(ExecuteRequest, request('execute_request', { code: '1' })), {
      code: '1',
      silent: false,
      user_expressions: {},
      allow_stdin: false,
      stop_on_error: true,
    });
    assert.throws(() => contentOf(ExecuteRequest, request('execute_request', { code: 5 })), /^RequestError: execute_request: code: /);
    assert.throws(() => contentOf(InspectRequest, request('inspect_request', { code: 'x', detail_level: 3 })), /inspect_request: detail_level/);
  });

  it('inspects the name under the cursor, else the callable whose parentheses hold it', () => {
    assert.equal(nameAt('np.linalg.norm', 5), 'np.linalg.norm');
    assert.equal(nameAt('print(x, ', 9), 'print');
    assert.equal(nameAt('f(g(1), ', 8), 'f');
    assert.equal(nameAt('1 + ', 4), null);
  });

  it('indents the next line of an incomplete statement: a level more after a colon, one less after a line that ends its block', () => {
    assert.equal(nextLineIndent('for i in x:'), '    ');
    assert.equal(nextLineIndent('def f():\n    if x:'), '        ');
    assert.equal(nextLineIndent('def f():\n    y = (1,'), '    ');
    assert.equal(nextLineIndent('if x:  # a comment: with a colon'), '    ');
    assert.equal(nextLineIndent('s = "ends with a colon:"  # and a comment'), '');
    assert.equal(nextLineIndent("d = {'#': 1,"), '');
    assert.equal(nextLineIndent('def f():\n    if x:\n        return 1'), '    ');
    assert.equal(nextLineIndent('for i in x:\n    pass'), '');
    assert.equal(nextLineIndent('while True:\n\tbreak'), '');
    assert.equal(nextLineIndent('def f():\n    returned = 1'), '    ', 'a name that starts with return');
    assert.equal(nextLineIndent('x = """a # b:"""'), '');
  });

  it("finds Jupyter's folders on each system as jupyter_core does", () => {
    const linux = jupyterFolders({ HOME: '/home/ada', JUPYTER_PATH: '/extra:/more', VIRTUAL_ENV: '/venv' }, 'linux');
    assert.equal(linux.environment, join('/venv', 'share', 'jupyter'));
    assert.deepEqual(linux.searched.slice(0, 2), ['/extra', '/more']);
    assert.ok(linux.searched.includes('/usr/share/jupyter'));
    assert.equal(jupyterFolders({ JUPYTER_DATA_DIR: '/data' }, 'linux').user, '/data');
    assert.equal(jupyterFolders({ APPDATA: 'C:\\Users\\ada\\AppData\\Roaming' }, 'win32').user, join('C:\\Users\\ada\\AppData\\Roaming', 'jupyter'));
    assert.equal(jupyterFolders({}, 'linux').environment, null);
  });
});
