import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FromRenderer, WidgetModels } from '../../src/shared/widget-state.ts';

const open = (id: string, state: Record<string, unknown>, extra: { buffer_paths?: string[][]; buffers?: string[] } = {}) => ({
  msg_type: 'comm_open' as const,
  content: { comm_id: id, target_name: 'jupyter.widget', data: { state, buffer_paths: extra.buffer_paths ?? [] } },
  buffers: extra.buffers ?? [],
});
const slider = { _model_name: 'IntSliderModel', _model_module: '@jupyter-widgets/controls', _model_module_version: '2.0.0', value: 3 };

describe("a notebook's widget models", () => {
  it('follow the comms: opened with their state, updated by either side, gone when closed; saved as Jupyter saves them', () => {
    const models = new WidgetModels();
    models.take(open('s', slider));
    models.take({ msg_type: 'comm_msg', content: { comm_id: 's', data: { method: 'update', state: { value: 4 }, buffer_paths: [] } }, buffers: [] });
    models.take({ msg_type: 'comm_msg', content: { comm_id: 's', data: { method: 'echo_update', state: { value: 5 } } }, buffers: [] });
    // A custom message (a button's click) is no state.
    models.take({ msg_type: 'comm_msg', content: { comm_id: 's', data: { method: 'custom', content: { event: 'click' } } }, buffers: [] });
    assert.deepEqual(models.saved(), {
      version_major: 2,
      version_minor: 0,
      state: { s: { model_name: 'IntSliderModel', model_module: '@jupyter-widgets/controls', model_module_version: '2.0.0', state: { ...slider, value: 5 } } },
    });
    models.take({ msg_type: 'comm_close', content: { comm_id: 's', data: {} }, buffers: [] });
    assert.equal(models.size, 0);
  });

  it("keep binary state by its path, the latest of each; leave other comms' messages alone", () => {
    const models = new WidgetModels();
    const image = { _model_name: 'ImageModel', _model_module: '@jupyter-widgets/controls', _model_module_version: '2.0.0', format: 'png' };
    models.take(open('i', image, { buffer_paths: [['value']], buffers: ['AAEC'] }));
    models.take({ msg_type: 'comm_msg', content: { comm_id: 'i', data: { method: 'update', state: {}, buffer_paths: [['value']] } }, buffers: ['AwQF'] });
    models.take({ msg_type: 'comm_open', content: { comm_id: 'v', target_name: 'jupyter.widget.control', data: {} }, buffers: [] });
    const saved = models.saved().state;
    assert.deepEqual(Object.keys(saved), ['i']);
    assert.deepEqual(saved.i!.buffers, [{ path: ['value'], data: 'AwQF', encoding: 'base64' }]);
  });

  it('begin from what the notebook saved, and ignore what is not a model', () => {
    const models = WidgetModels.from({
      version_major: 2,
      version_minor: 0,
      state: { s: { model_name: 'IntSliderModel', model_module: '@jupyter-widgets/controls', model_module_version: '2.0.0', state: { value: 9 } }, junk: 7 },
    });
    assert.deepEqual(Object.keys(models.saved().state), ['s']);
    assert.equal(WidgetModels.from(undefined).size, 0);
    assert.equal(WidgetModels.from('not widgets').size, 0);
  });

  it("read the renderer's messages by their schema, refusing others", () => {
    assert.deepEqual(FromRenderer.parse({ type: 'comm', id: 1, comm: { msg_type: 'comm_msg', content: { comm_id: 's' } } }).type, 'comm');
    assert.equal(FromRenderer.safeParse({ type: 'comm', id: 1, comm: { msg_type: 'execute_request' } }).success, false);
    assert.equal(FromRenderer.safeParse({ type: 'shutdown' }).success, false);
  });
});
