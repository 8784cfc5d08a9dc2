import type { PerennialClient } from '../shared/perennial-client.ts';
import type { Content } from './messages.ts';

/** Jupyter counts a cursor in code points, JavaScript strings in UTF-16 units. */
function utf16Offset(code: string, codePoints: number): number {
  return [...code].slice(0, codePoints).join('').length;
}

function codePointOffset(code: string, utf16: number): number {
  return [...code.slice(0, utf16)].length;
}

/** `complete_reply`: what the name before the cursor can become, from the machine's namespace. */
export async function completeReply(client: PerennialClient, machine: string, code: string, cursorPos: number): Promise<Content> {
  const cursor = utf16Offset(code, cursorPos);
  const { matches, start } = await client.complete(machine, code, cursor);
  // Perennial marks a callable with "("; Jupyter front ends insert a match as it is, and say its type apart.
  const texts = matches.map((match) => match.replace(/\($/, ''));
  return {
    status: 'ok',
    matches: texts,
    cursor_start: codePointOffset(code, start),
    cursor_end: cursorPos,
    metadata: {
      _jupyter_types_experimental: matches.map((match, i) => ({
        start: codePointOffset(code, start),
        end: cursorPos,
        text: texts[i],
        type: match.endsWith('(') ? 'function' : 'instance',
      })),
    },
  };
}

/**
 * The dotted name an inspection is about: the one under the cursor, else (inside a call's
 * parentheses) the callable's, as IPython takes it.
 */
export function nameAt(code: string, cursor: number): string | null {
  const isName = (c: string | undefined) => c !== undefined && /[\w.]/u.test(c);
  let start = cursor;
  let end = cursor;
  while (isName(code[start - 1])) start--;
  while (isName(code[end])) end++;
  const here = code.slice(start, end).replace(/^\.+|\.+$/g, '');
  if (here && !/^\d/.test(here)) return here;
  let depth = 0;
  for (let at = cursor - 1; at >= 0; at--) {
    if (code[at] === ')') depth++;
    else if (code[at] === '(' && depth-- === 0) return nameAt(code, at);
  }
  return null;
}

/** `inspect_reply`: the signature, docstring and type of the name at the cursor, as IPython's `?` shows them. */
export async function inspectReply(client: PerennialClient, machine: string, code: string, cursorPos: number, detailLevel: number): Promise<Content> {
  const name = nameAt(code, utf16Offset(code, cursorPos));
  if (!name) return { status: 'ok', found: false, data: {}, metadata: {} };
  let info;
  try {
    info = await client.inspect(machine, name);
  } catch {
    // A name the namespace does not hold is not found, as IPython answers it.
    return { status: 'ok', found: false, data: {}, metadata: {} };
  }
  // As IPython's `?`, and with detail (`??`) its source in the docstring's place where there is one.
  const source = detailLevel > 0 && info.source ? info.source.trimEnd() : null;
  const lines = [
    ...(info.signature ? [`Signature: ${info.name}${info.signature}`] : []),
    ...(source
      ? [`Source:\n${source}`, ...(info.file ? [`File:      ${info.file}`] : [])]
      : info.doc
        ? [`Docstring:${info.doc.includes('\n') ? '\n' : ' '}${info.doc}`]
        : ['Docstring: <no docstring>']),
    `Type:      ${info.type}`,
  ];
  return { status: 'ok', found: true, data: { 'text/plain': lines.join('\n') }, metadata: {} };
}
