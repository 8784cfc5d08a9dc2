import type { McpUiHostCapabilities } from '@modelcontextprotocol/ext-apps';
import type { CallToolResult } from '@modelcontextprotocol/client';
import type { FollowOutput, ReplDescription } from '../mcp/tools/index.ts';
import type { CheckpointInfo } from '../shared/types.ts';
import { VERSION } from '../shared/version.ts';
import { awaitingResult, callSection, runOutput, type Call } from './call-section.ts';
import { ago, h } from './dom.ts';
import { HostBridge, textOf } from './host-bridge.ts';
import { checkpointBefore, machineSection } from './machine-section.ts';
import { applyHostContext } from './theme.ts';

/** A question before a destructive action, shown in place of the actions. */
interface Confirmation {
  question: string;
  confirm: string;
  run(): Promise<void>;
}

const bridge = new HostBridge();
const header = h('header');
const callSlot = h('div');
const machineSlot = h('div');
const statusLine = h('p', { class: 'status', role: 'status', 'aria-live': 'polite' });
document.body.append(header, statusLine, callSlot, machineSlot);

let tool = '';
let args: Record<string, unknown> = {};
let call: Call | null = null;
let replId: string | null = null;
let description: ReplDescription | null = null;
let confirmation: Confirmation | null = null;
let acting = false;
let host: McpUiHostCapabilities = {};
/** What the user did here, told to the model with each update (an update replaces the last). */
const userActions: string[] = [];
const figureSources = new Map<string, Promise<string>>();
/** How often a running call's output is read. */
const POLL_MS = 1000;

bridge.on('ui/notifications/tool-input', (params) => {
  args = params.arguments ?? {};
  tool ||= toolOf(args);
  replId = typeof args.replId === 'string' ? args.replId : replId;
  call = { tool, code: codeOf(args), caption: captionOf(tool), result: null, cancelled: null, after: null, since: sinceNow(), live: null };
  renderAll();
  void refresh();
  void followLive(call);
});
bridge.on('ui/notifications/tool-result', (result) => {
  call ??= { tool, code: null, caption: null, result: null, cancelled: null, after: null, since: sinceNow(), live: null };
  const created = (result.structuredContent as { replId?: unknown } | undefined)?.replId;
  if (typeof created === 'string') replId = created;
  void takeResult(call, result);
});
bridge.on('ui/notifications/tool-cancelled', ({ reason }) => {
  if (call && !call.result) call.cancelled = reason ?? 'by the host';
  renderAll();
});
bridge.on('ui/notifications/host-context-changed', applyHostContext);

void bridge.connect({ name: 'perennial-machine-view', version: VERSION }).then(
  (init) => {
    host = init.hostCapabilities;
    reportSize();
    tool = init.hostContext.toolInfo?.tool.name ?? '';
    applyHostContext(init.hostContext);
    renderAll();
  },
  (error: Error) => showStatus(`The host did not answer: ${error.message}`, 'danger'),
);

/**
 * The linked tool a call with this input is to: the host's toolInfo says, but the spec makes it
 * optional and VS Code (1.139) leaves it out. The three tools' inputs tell them apart.
 */
function toolOf(input: Record<string, unknown>): string {
  if (typeof input.pythonCode === 'string') return 'run-python-in-repl';
  if (typeof input.path === 'string') return 'run-file-in-repl';
  return 'create-python-repl';
}

/** The code a call runs, as the user should read it (a file run as IPython writes it). */
function codeOf(input: Record<string, unknown>): string | null {
  if (typeof input.pythonCode === 'string') return input.pythonCode;
  if (typeof input.path === 'string') return `%run -i ${input.path}`;
  return null;
}

/**
 * The earliest a call heard of now can have started on the server: a host may send the call before
 * it shows the view, and the server's clock may differ a little from this one.
 */
function sinceNow(): string {
  return new Date(Date.now() - 30_000).toISOString();
}

function captionOf(name: string): string | null {
  return name === 'create-python-repl' ? 'A new REPL' : null;
}

/**
 * Tells the host the view's size when it changes, once a frame, from after the handshake: the
 * height its content needs (not the frame's, which the host sets from what it is told) and the
 * frame's width, as the SDK's App does.
 */
function reportSize(): void {
  let pending = false;
  let last = '';
  const measure = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const root = document.documentElement;
      const height = root.style.height;
      root.style.height = 'max-content';
      const size = { width: Math.ceil(window.innerWidth), height: Math.ceil(root.getBoundingClientRect().height) };
      root.style.height = height;
      if (`${size.width}x${size.height}` === last) return;
      last = `${size.width}x${size.height}`;
      bridge.notify('ui/notifications/size-changed', size);
    });
  };
  measure();
  const observer = new ResizeObserver(measure);
  observer.observe(document.documentElement);
  observer.observe(document.body);
}

/** Reads the machine as it is now. */
async function refresh(): Promise<void> {
  if (!replId || !host.serverTools) return;
  try {
    const result = await bridge.callTool('describe-python-repl', { replId });
    description = result.structuredContent as unknown as ReplDescription;
  } catch (error) {
    showStatus(`Could not read ${replId}: ${(error as Error).message}`, 'danger');
  }
  renderAll();
}

function renderAll(): void {
  renderHeader();
  renderCall();
  // While a call runs, the machine as it was would be stale, and a tall view pushes the host's
  // prompts about the call (above it in VS Code) out of sight.
  machineSlot.replaceChildren(
    description && !awaitingResult(call) ? machineSection(description, runOutput(call?.result ?? null)?.seq ?? null, { detail, rollBackTo: askRollback }) : '',
  );
}

function renderCall(): void {
  callSlot.replaceChildren(call ? callSection(call, readFigure, zoom) : h('p', { class: 'running' }, 'Waiting for the call…'));
}

/** The input the server finds a run's instruction by, before its seq is known. */
function runInput(target: Call): Record<string, unknown> {
  return target.tool === 'run-file-in-repl' ? { path: args.path } : { pythonCode: args.pythonCode };
}

/**
 * Shows a call's output as it comes, until its result does: polls follow-repl-instruction, which
 * answers at once, from a second into the call (a quicker call shows its output with its result).
 * Once the server has finished the instruction, the view says the host is holding the result.
 */
async function followLive(target: Call): Promise<void> {
  if (target.code === null || !host.serverTools) return;
  // A host may show the view before it sends the call, while it asks the person: until the server
  // has the instruction, the view looks for it once a second, then, after a minute, every 5 s.
  for (let misses = 0; ;) {
    await new Promise((resolve) => setTimeout(resolve, misses > 60 ? 5 * POLL_MS : POLL_MS));
    if (call !== target || !awaitingResult(target) || !replId) return;
    const followed = await follow(target, 0).catch(() => null);
    if (!followed) return;
    if (!followed.found) misses++;
    // Done: the machine is no longer busy, whatever the host does with the result.
    if (followed.done) return refresh();
    if (followed.chunks.length) renderCall();
  }
}

/**
 * Takes a call's result. One that says its code still runs (the call had to answer first) is
 * followed on to the end, when wait-for-repl-instruction gives the whole result.
 */
async function takeResult(target: Call, result: CallToolResult): Promise<void> {
  const output = runOutput(result);
  if (!output?.running) {
    target.result = result;
    renderAll();
    void refresh();
    return completeOutput(target);
  }
  if (target.live?.seq !== output.seq) target.live = { seq: output.seq, chunks: [], complete: false };
  renderAll();
  for (;;) {
    const ended = await bridge.callTool('wait-for-repl-instruction', { replId, seq: output.seq, waitSeconds: 20 }).catch(() => null);
    if (!ended || call !== target) return;
    if (!runOutput(ended)?.running) return takeResult(target, ended);
  }
}

/** Once the result is in, the rest of its output in order (the result has each stream apart). */
async function completeOutput(target: Call): Promise<void> {
  const seq = runOutput(target.result)?.seq;
  if (seq === undefined || !host.serverTools || target.live?.complete) return;
  if (target.live && target.live.seq !== seq) target.live = null;
  target.live ??= { seq, chunks: [], complete: false };
  const followed = await follow(target, 0).catch(() => null);
  if (followed?.done && call === target) renderCall();
}

/** One follow-repl-instruction call: what came after the output the view has. */
async function follow(target: Call, waitSeconds: number): Promise<FollowOutput> {
  const by = target.live ? { seq: target.live.seq } : { ...runInput(target), since: target.since, ...(target.after === null ? {} : { after: target.after }) };
  const from = target.live?.chunks.length ?? 0;
  const result = await bridge.callTool('follow-repl-instruction', { replId, ...by, from, waitSeconds });
  const followed = result.structuredContent as unknown as FollowOutput;
  if (followed.found && followed.seq !== null) {
    target.live ??= { seq: followed.seq, chunks: [], complete: false };
    // A poll and the read after the result can overlap: what the other added meanwhile is not added again.
    target.live.chunks.push(...followed.chunks.slice(target.live.chunks.length - from));
    target.live.complete ||= followed.done;
  }
  return followed;
}

function renderHeader(): void {
  const machine = description?.machine;
  const title = h(
    'div',
    { class: 'title' },
    h('strong', {}, 'Perennial'),
    replId ? h('span', { class: 'repl' }, replId) : null,
    machine ? h('span', { class: 'chip' }, machine.engine) : null,
    machine ? h('span', { class: `chip state-${machine.state}` }, machine.state) : null,
  );
  header.replaceChildren(title, confirmation ? confirmBar(confirmation) : actionBar());
}

function actionBar(): HTMLElement {
  const output = runOutput(call?.result ?? null);
  const running = (awaitingResult(call) && !call?.live?.complete) || description?.machine.state === 'busy';
  const canAct = Boolean(replId && host.serverTools) && !acting;
  const before = output && description?.checkpoints ? checkpointBefore(description.checkpoints, output.seq) : undefined;
  const rerunnable = call?.code !== null && call?.code !== undefined && (call.tool === 'run-python-in-repl' || call.tool === 'run-file-in-repl');
  const button = (label: string, title: string, enabled: boolean, onclick: () => void, kind = '') =>
    h('button', { type: 'button', class: kind, title, disabled: !enabled, onclick }, label);
  return h(
    'div',
    { class: 'actions', role: 'toolbar', 'aria-label': 'Actions on the machine' },
    button('Interrupt', 'Stop the code that runs (KeyboardInterrupt); the state is kept', canAct && running, () => void interrupt()),
    button('Re-run…', 'Run this code again in the same REPL', canAct && rerunnable && !running, () => askRerun()),
    button(
      'Roll back…',
      before ? `Return the REPL to checkpoint ${before.label ?? before.id}, the state before In [${before.seq}]` : 'No checkpoint from before this instruction',
      canAct && before !== undefined,
      () => before && askRollback(before),
      'danger',
    ),
    button('Fork', 'Make a new REPL with the state this one has now', canAct, () => void fork()),
    button('Refresh', 'Read the REPL again', canAct, () => void refresh()),
  );
}

function confirmBar(question: Confirmation): HTMLElement {
  return h(
    'div',
    { class: 'confirm', role: 'alertdialog', 'aria-label': 'Confirm' },
    h('span', {}, question.question),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        onclick: () => {
          confirmation = null;
          void act(question.run);
        },
      },
      question.confirm,
    ),
    h(
      'button',
      {
        type: 'button',
        onclick: () => {
          confirmation = null;
          renderHeader();
        },
      },
      'Cancel',
    ),
  );
}

function askRollback(checkpoint: CheckpointInfo): void {
  const name = checkpoint.label ? `"${checkpoint.label}"` : `checkpoint ${checkpoint.id}`;
  confirmation = {
    question: `Roll ${replId} back to ${name}, the state before In [${checkpoint.seq}] (${ago(checkpoint.at)})? What ran since is undone; the state now is kept as an automatic checkpoint.`,
    confirm: 'Roll back',
    run: async () => {
      const result = await bridge.callTool('rollback-python-repl', { replId, checkpoint: checkpoint.id });
      showStatus(textOf(result), 'ok');
      await tellModel(`rolled ${replId} back to ${name} (the state before instruction ${checkpoint.seq})`);
    },
  };
  renderHeader();
}

function askRerun(): void {
  if (!call?.code) return;
  const again = call;
  confirmation = {
    question: `Run this code again in ${replId}? It runs on the state the REPL has now.`,
    confirm: 'Run again',
    run: async () => {
      const before = runOutput(again.result)?.seq;
      const rerun: Call = {
        ...again,
        caption: before === undefined ? 'Re-run' : `Re-run of In [${before}]`,
        result: null,
        cancelled: null,
        after: before ?? null,
        since: sinceNow(),
        live: null,
      };
      call = rerun;
      renderAll();
      const timeout = typeof args.timeoutSeconds === 'number' ? { timeoutSeconds: args.timeoutSeconds } : {};
      const running = bridge.request('tools/call', { name: again.tool, arguments: { replId, ...runInput(again), ...timeout } });
      void followLive(rerun);
      const result: CallToolResult = await running;
      const seq = runOutput(result)?.seq;
      if (before !== undefined && seq !== undefined) rerun.caption = `Re-run of In [${before}] as In [${seq}]`;
      void takeResult(rerun, result);
      await tellModel(`ran the code of instruction ${before ?? '?'} again in ${replId}${seq !== undefined ? ` as instruction ${seq}` : ''}`);
    },
  };
  renderHeader();
}

async function interrupt(): Promise<void> {
  await act(async () => {
    await bridge.callTool('interrupt-python-repl', { replId });
    showStatus(`Interrupted ${replId}`, 'ok');
    await tellModel(`interrupted what ran in ${replId}`);
  });
}

async function fork(): Promise<void> {
  await act(async () => {
    const result = await bridge.callTool('fork-python-repl', { replId });
    const forked = (result.structuredContent as { replId: string }).replId;
    showStatus(`Forked ${replId} as ${forked}`, 'ok');
    await tellModel(`forked ${replId} as a new REPL, ${forked}, with its state at that moment`);
  });
}

/** Runs an action with the buttons off, then reads the machine again; a failure is shown. */
async function act(action: () => Promise<void>): Promise<void> {
  acting = true;
  renderHeader();
  try {
    await action();
  } catch (error) {
    showStatus((error as Error).message, 'danger');
  } finally {
    acting = false;
  }
  await refresh();
}

/** Tells the model what the user did here, for its next turn (the host sends it with the next message). */
async function tellModel(action: string): Promise<void> {
  userActions.push(action);
  if (!host.updateModelContext) return;
  const text = `In the Perennial view, the user ${userActions.join('; then ')}.`;
  await bridge.request('ui/update-model-context', { content: [{ type: 'text', text }] }).catch(() => {});
}

function detail(name: string): Promise<string> {
  return bridge.callTool('get-repl-variable', { replId, name }).then((result) => {
    const variable = result.structuredContent as { repr: string; truncated: boolean };
    return variable.truncated ? `${variable.repr}\n… (cut)` : variable.repr;
  });
}

function readFigure(uri: string): Promise<string> {
  let source = figureSources.get(uri);
  if (!source) {
    source = bridge.request('resources/read', { uri }).then(({ contents }) => {
      const image = contents[0];
      if (!image || !('blob' in image)) throw new Error('the server sent no image');
      return `data:${image.mimeType ?? 'image/png'};base64,${image.blob}`;
    });
    figureSources.set(uri, source);
  }
  return source;
}

/** A figure at full size over the view: a click switches between fitting and its own size. */
function zoom(src: string, title: string): void {
  const image = h('img', { src, alt: title });
  const overlay = h(
    'div',
    { class: 'zoom fit', role: 'dialog', 'aria-label': title },
    h('div', { class: 'zoom-bar' }, h('span', {}, title), h('button', { type: 'button', onclick: () => close() }, 'Close')),
    h('div', { class: 'zoom-body' }, image),
  );
  const close = () => {
    overlay.remove();
    document.removeEventListener('keydown', onKey);
  };
  const onKey = (event: KeyboardEvent) => event.key === 'Escape' && close();
  image.addEventListener('click', () => overlay.classList.toggle('fit'));
  document.addEventListener('keydown', onKey);
  document.body.append(overlay);
}

function showStatus(text: string, kind: 'ok' | 'danger'): void {
  statusLine.textContent = text;
  statusLine.className = `status ${kind}`;
}
