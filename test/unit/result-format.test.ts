import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resultText, viewResult } from '../../src/shared/result-format.ts';
import type { ExecResult } from '../../src/shared/types.ts';

const png = { mimeType: 'image/png' as const, data: 'iVBORw0KGgo=' };

describe('result format', () => {
  it('gives the value, notices before losses, and the figures', () => {
    const result: ExecResult = {
      value: '42',
      data: {
        notices: ['The server stopped unexpectedly.'],
        lost: [
          { name: 'g', reason: 'a generator' },
          { name: '*', reason: 'the snapshot could not be read' },
        ],
        images: [png],
      },
      runtime_ms: 3,
    };
    assert.deepEqual(viewResult(result), {
      value: '42',
      error: null,
      displayed: [],
      notes: [
        { kind: 'notice', text: 'The server stopped unexpectedly.' },
        { kind: 'lost', text: 'Not kept across the swap: g (a generator)' },
        { kind: 'lost', text: 'Not kept across the swap: the whole state (the snapshot could not be read)' },
      ],
      images: [png],
      timedOut: false,
    });
  });

  it("adds the surface's hint to a result its timeout stopped, and to no other", () => {
    const hint = 'give it longer with --timeout SECONDS (0: no limit)';
    const stopped: ExecResult = { error: 'Timed out after 15 s: the instruction was interrupted.\nKeyboardInterrupt', runtime_ms: 15_000 };
    const view = viewResult(stopped, hint);
    assert.equal(view.timedOut, true);
    assert.deepEqual(view.notes, [{ kind: 'notice', text: hint }]);
    assert.deepEqual(viewResult(stopped).notes, [], 'no hint, none given');
    const failed: ExecResult = { error: 'Traceback (most recent call last):\nValueError: Timed out after 3 s', runtime_ms: 1 };
    assert.equal(viewResult(failed, hint).timedOut, false, "the code's own error that mentions a timeout");
    assert.deepEqual(viewResult(failed, hint).notes, []);
  });

  it('writes the whole instruction as text: output, traceback or value, then the notes', () => {
    const chunks = [
      { stream: 'stdout' as const, data: 'hello', seq: 0 },
      { stream: 'stderr' as const, data: 'careful', seq: 1 },
    ];
    assert.equal(resultText(chunks, { value: "'x'", data: null, runtime_ms: 1 }), "hello\n[stderr] careful\nOut: 'x'");
    const failed: ExecResult = { error: 'Traceback ...\nZeroDivisionError', data: { lost: [{ name: 'f', reason: 'open file' }] }, runtime_ms: 1 };
    assert.equal(resultText([], failed), 'Traceback ...\nZeroDivisionError\n[perennial] Not kept across the swap: f (open file)');
    assert.equal(resultText([], { value: null, data: null, runtime_ms: 0 }), '(no output, no value)');
    const plotted = { value: null, data: { images: [png, png] }, runtime_ms: 0 };
    assert.equal(resultText([], plotted), '(2 figures)');
    assert.equal(resultText([], plotted, ['2 figures: read them']), '[perennial] 2 figures: read them');
  });

  it('puts displayed text among the output where it was displayed; the value bundle and a clear are not repeated', () => {
    const chunks = [
      { stream: 'stdout' as const, data: 'before', seq: 0 },
      { stream: 'stdout' as const, data: 'after', seq: 1 },
    ];
    const result: ExecResult = {
      value: '3',
      data: {
        display: [
          { data: { 'text/plain': 'first', 'text/html': '<b>first</b>' }, metadata: {}, afterOutput: 1 },
          { clear: true, wait: false, afterOutput: 1 },
          { data: { 'image/png': 'iVBORw0KGgo=' }, metadata: {}, afterOutput: 2 },
          { data: { 'text/plain': 'last' }, metadata: {}, afterOutput: 2 },
          { data: { 'text/plain': '3' }, metadata: {}, result: true, afterOutput: 2 },
        ],
      },
      runtime_ms: 1,
    };
    assert.deepEqual(viewResult(result).displayed, [
      { text: 'first', afterOutput: 1 },
      { text: 'last', afterOutput: 2 },
    ]);
    assert.equal(resultText(chunks, result), 'before\nfirst\nafter\nlast\nOut: 3');
  });
});
