import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { OutputLines } from '../../src/machines/output-lines.ts';
import type { OutputChunk } from '../../src/shared/types.ts';

function collector() {
  const chunks: OutputChunk[] = [];
  const lines = new OutputLines((c) => chunks.push(c), 50);
  return { chunks, lines };
}

describe('OutputLines', () => {
  it('emits one chunk per line without the newline, numbered from 0', () => {
    const { chunks, lines } = collector();
    lines.push('stdout', 'a\nb\n');
    lines.push('stdout', 'c\n');
    assert.deepEqual(chunks, [
      { stream: 'stdout', data: 'a', seq: 0 },
      { stream: 'stdout', data: 'b', seq: 1 },
      { stream: 'stdout', data: 'c', seq: 2 },
    ]);
  });

  it('joins a line written in pieces', () => {
    const { chunks, lines } = collector();
    lines.push('stdout', 'hel');
    lines.push('stdout', 'lo\nwor');
    lines.push('stdout', 'ld\n');
    assert.deepEqual(
      chunks.map((c) => c.data),
      ['hello', 'world'],
    );
  });

  it('keeps empty lines', () => {
    const { chunks, lines } = collector();
    lines.push('stdout', '\n\nx\n');
    assert.deepEqual(
      chunks.map((c) => c.data),
      ['', '', 'x'],
    );
  });

  it('flushes a partial line when the other stream writes, keeping the order', () => {
    const { chunks, lines } = collector();
    lines.push('stdout', 'progress: ');
    lines.push('stderr', 'warning\n');
    lines.push('stdout', 'done\n');
    assert.deepEqual(
      chunks.map((c) => [c.stream, c.data]),
      [
        ['stdout', 'progress: '],
        ['stderr', 'warning'],
        ['stdout', 'done'],
      ],
    );
  });

  it('sends a partial line after the pause, then the rest as its own chunk', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { chunks, lines } = collector();
      lines.push('stdout', 'working...');
      assert.equal(chunks.length, 0);
      mock.timers.tick(49);
      assert.equal(chunks.length, 0);
      mock.timers.tick(1);
      assert.deepEqual(chunks, [{ stream: 'stdout', data: 'working...', seq: 0 }]);
      lines.push('stdout', ' ok\n');
      assert.deepEqual(chunks[1], { stream: 'stdout', data: ' ok', seq: 1 });
    } finally {
      mock.timers.reset();
    }
  });

  it('makes no empty chunk of the newline that ends a partial line sent after the pause', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { chunks, lines } = collector();
      lines.push('stdout', 'Optimization terminated successfully.');
      mock.timers.tick(50);
      lines.push('stdout', '\n         Current function value: 1.41\n\n');
      assert.deepEqual(
        chunks.map((c) => c.data),
        ['Optimization terminated successfully.', '         Current function value: 1.41', ''],
      );
    } finally {
      mock.timers.reset();
    }
  });

  it('does not send a completed line twice when the timer fires', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { chunks, lines } = collector();
      lines.push('stdout', 'abc');
      lines.push('stdout', 'def\n');
      mock.timers.tick(100);
      assert.deepEqual(
        chunks.map((c) => c.data),
        ['abcdef'],
      );
    } finally {
      mock.timers.reset();
    }
  });

  it('end() sends what is left', () => {
    const { chunks, lines } = collector();
    lines.push('stderr', 'no newline');
    lines.end();
    assert.deepEqual(chunks, [{ stream: 'stderr', data: 'no newline', seq: 0 }]);
    lines.end();
    assert.equal(chunks.length, 1);
  });

  it('places what a cell displayed after the chunks written before it, counting characters as the kernel does', () => {
    const { chunks, lines } = collector();
    lines.push('stdout', 'before 🐍\n');
    lines.push('stderr', 'warn\n');
    lines.push('stdout', 'partial');
    lines.end();
    const data = {
      display: [0, 9, 14, 21].map((chars) => ({ data: { 'text/plain': `at ${chars}` }, metadata: {}, output_chars: chars, afterOutput: -1 })),
    };
    lines.placeDisplays(data);
    assert.equal(chunks.length, 3);
    assert.deepEqual(
      data.display.map((d) => [d.afterOutput, 'output_chars' in d]),
      [
        [0, false],
        [1, false],
        [2, false],
        [3, false],
      ],
    );
  });
});
