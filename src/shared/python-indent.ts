/**
 * The indentation the next line of an unfinished Python statement takes at an interactive prompt,
 * as IPython and Python's own REPL (3.13) give it: the last line's, one level more after a colon,
 * one less after a line that ends its block (`return`, `pass`, `raise`, `break`, `continue`).
 * Read from the last line's text (its comment and strings set aside), not parsed.
 */
export function nextLineIndent(code: string): string {
  const last =
    code
      .split('\n')
      .filter((line) => line.trim())
      .at(-1) ?? '';
  const indent = /^[ \t]*/.exec(last)![0];
  const statement = withoutComment(last).trimEnd();
  if (statement.endsWith(':')) return `${indent}${indent.startsWith('\t') ? '\t' : LEVEL}`;
  if (/^\s*(return|pass|raise|break|continue)\b/.test(statement)) return indent.startsWith('\t') ? indent.slice(1) : indent.slice(0, -LEVEL.length);
  return indent;
}

const LEVEL = '    ';

/** `line` up to its comment: a `#` outside a string. */
function withoutComment(line: string): string {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    if (quote) {
      if (line[i] === '\\') i++;
      else if (line.startsWith(quote, i)) {
        i += quote.length - 1;
        quote = '';
      }
      continue;
    }
    const c = line[i]!;
    if (c === '#') return line.slice(0, i);
    if (c === '"' || c === "'") {
      quote = line.startsWith(c.repeat(3), i) ? c.repeat(3) : c;
      i += quote.length - 1;
    }
  }
  return line;
}
