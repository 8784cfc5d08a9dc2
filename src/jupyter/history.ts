import type { PerennialClient } from '../shared/perennial-client.ts';
import { HistoryLast } from '../shared/requests.ts';
import type { HistoryEntry } from '../shared/types.ts';
import type { Content } from './messages.ts';
import type { HistoryRequest } from './requests.ts';

/** The machine's history is one session; a cell's line number is its In [n]: its instruction's number plus one. */
const SESSION = 1;

/** `history_reply` from the machine's history (every surface's instructions, not only this kernel's). */
export async function historyReply(client: PerennialClient, machine: string, request: HistoryRequest): Promise<Content> {
  const most = HistoryLast.maxValue ?? 1000;
  const last = request.hist_access_type === 'tail' ? Math.min(Math.max(request.n ?? 10, 1), most) : most;
  let entries = (await client.history(machine, last)).filter((entry) => entry.code.trim());
  if (request.hist_access_type === 'range') {
    const start = request.start ?? 0;
    const stop = request.stop ?? Infinity;
    entries = entries.filter((entry) => entry.seq + 1 >= start && entry.seq + 1 < stop);
  } else if (request.hist_access_type === 'search') {
    const pattern = globRegExp(request.pattern ?? '*');
    entries = entries.filter((entry) => pattern.test(entry.code));
    if (request.unique) entries = entries.filter((entry, i) => entries.findLastIndex((other) => other.code === entry.code) === i);
    if (request.n) entries = entries.slice(-request.n);
  }
  return { status: 'ok', history: entries.map((entry) => historyItem(entry, request.output)) };
}

function historyItem(entry: HistoryEntry, output: boolean): unknown[] {
  if (!output) return [SESSION, entry.seq + 1, entry.code];
  const value = entry.result && 'value' in entry.result ? entry.result.value : null;
  return [SESSION, entry.seq + 1, [entry.code, value]];
}

/** A glob (`*`, `?`, `[...]`) as the whole-text pattern it is in IPython's history search. */
function globRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '[' && glob.indexOf(']', i + 1) > i + 1) {
      const end = glob.indexOf(']', i + 1);
      source += `[${glob
        .slice(i + 1, end)
        .replace(/^!/, '^')
        .replace(/\\/g, '\\\\')}]`;
      i = end;
    } else source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}
