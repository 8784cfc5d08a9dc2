import type { ReplDescription } from '../mcp/tools/index.ts';
import type { CheckpointInfo, VariableSummary } from '../shared/types.ts';
import { ago, h } from './dom.ts';

export interface MachineHandlers {
  /** A variable's full repr (bounded by the server). */
  detail(name: string): Promise<string>;
  /** Asks to roll the machine back to a checkpoint (the view confirms first). */
  rollBackTo(checkpoint: CheckpointInfo): void;
}

/** The machine as it is now: its variables, and its checkpoints on a timeline. */
export function machineSection(description: ReplDescription, thisSeq: number | null, handlers: MachineHandlers): HTMLElement {
  return h(
    'section',
    { class: 'machine', 'aria-label': 'The machine now' },
    h('h2', {}, `Variables (${description.variables.length})`),
    description.variables.length ? variablesTable(description.variables, handlers) : h('p', { class: 'empty' }, 'No variables yet.'),
    h('h2', {}, 'Checkpoints'),
    description.checkpoints === null
      ? h('p', { class: 'empty' }, 'This backend keeps no checkpoints.')
      : timeline(description.checkpoints, description.machine.nextSeq, thisSeq, handlers),
  );
}

/** A row per variable; a click shows its full repr below it (a DataFrame's or an array's preview). */
function variablesTable(variables: VariableSummary[], handlers: MachineHandlers): HTMLElement {
  const body = h('tbody');
  for (const variable of variables) {
    const size = variable.shape ? variable.shape.join(' × ') : variable.size !== undefined ? String(variable.size) : '';
    const toggle = h('button', { type: 'button', class: 'link', 'aria-expanded': 'false', title: 'Show the full value' }, variable.name);
    const row = h(
      'tr',
      {},
      h('td', {}, toggle),
      h('td', { class: 'type' }, variable.type),
      h('td', { class: 'repr' }, variable.repr),
      h('td', { class: 'size' }, size),
    );
    body.append(row);
    let detail: HTMLElement | null = null;
    toggle.addEventListener('click', () => {
      if (detail) {
        detail.remove();
        detail = null;
        toggle.setAttribute('aria-expanded', 'false');
        return;
      }
      const pre = h('pre', { class: 'detail' }, 'Reading…');
      detail = h('tr', { class: 'detail-row' }, h('td', { colspan: 4 }, pre));
      row.after(detail);
      toggle.setAttribute('aria-expanded', 'true');
      handlers.detail(variable.name).then(
        (repr) => (pre.textContent = repr),
        (error: Error) => {
          pre.textContent = error.message;
          pre.classList.add('error');
        },
      );
    });
  }
  return h(
    'table',
    { class: 'variables' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Type'), h('th', {}, 'Value'), h('th', {}, 'Size'))),
    body,
  );
}

/**
 * The checkpoints in order, then "now". The one a rollback of this call would return to is
 * marked; choosing any shows what it holds and offers to roll back to it.
 */
function timeline(checkpoints: CheckpointInfo[], nextSeq: number, thisSeq: number | null, handlers: MachineHandlers): HTMLElement {
  const before = thisSeq === null ? undefined : checkpointBefore(checkpoints, thisSeq);
  const details = h('div', { class: 'checkpoint-details', 'aria-live': 'polite' });
  const track = h('ol', { class: 'timeline', 'aria-label': 'Checkpoints, oldest first' });
  const select = (checkpoint: CheckpointInfo, node: HTMLElement) => {
    for (const other of track.querySelectorAll('[aria-pressed="true"]')) other.setAttribute('aria-pressed', 'false');
    node.setAttribute('aria-pressed', 'true');
    details.replaceChildren(
      h(
        'span',
        {},
        `${checkpoint.label ? `"${checkpoint.label}"` : `Checkpoint ${checkpoint.id}`}: the state before In [${checkpoint.seq}], ${ago(checkpoint.at)}${checkpoint.auto ? ' (automatic)' : ''}. `,
      ),
      h('button', { type: 'button', class: 'danger', onclick: () => handlers.rollBackTo(checkpoint) }, 'Roll back to it…'),
    );
  };
  for (const checkpoint of checkpoints) {
    const node = h(
      'button',
      {
        type: 'button',
        class: `node${checkpoint.auto ? ' auto' : ''}${checkpoint === before ? ' before-this' : ''}`,
        'aria-pressed': 'false',
        title: `${checkpoint.label ?? `Checkpoint ${checkpoint.id}`}, taken ${checkpoint.at}`,
      },
      h('span', { class: 'dot' }),
      h('span', { class: 'node-label' }, checkpoint.label ?? `#${checkpoint.id}`),
      h('span', { class: 'node-seq' }, `before In [${checkpoint.seq}]`),
    );
    node.addEventListener('click', () => select(checkpoint, node));
    track.append(h('li', {}, node));
  }
  track.append(
    h(
      'li',
      {},
      h(
        'span',
        { class: 'node now' },
        h('span', { class: 'dot' }),
        h('span', { class: 'node-label' }, 'now'),
        h('span', { class: 'node-seq' }, `next In [${nextSeq}]`),
      ),
    ),
  );
  if (!checkpoints.length) return h('div', {}, track, h('p', { class: 'empty' }, 'None yet: one is taken after each change is saved.'));
  return h('div', {}, track, details);
}

/** The newest checkpoint that holds none of instruction `seq`'s effects: where "roll back to before it" returns. */
export function checkpointBefore(checkpoints: CheckpointInfo[], seq: number): CheckpointInfo | undefined {
  return checkpoints.filter((checkpoint) => checkpoint.seq <= seq).sort((a, b) => b.seq - a.seq || Date.parse(b.at) - Date.parse(a.at))[0];
}
