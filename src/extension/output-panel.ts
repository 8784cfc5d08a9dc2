import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { viewResult, type ResultNote } from '../shared/result-format.ts';
import type { DisplayBundle, ExecResult } from '../shared/types.ts';
import { COMMANDS } from './commands.ts';

/** One instruction as the panel shows it. */
interface Entry {
  id: number;
  machine: string;
  code: string;
  /** Streamed text, then what the code displayed: as HTML where it has HTML, else as text. */
  output: Array<{ stream: 'stdout' | 'stderr'; text: string } | { html: string }>;
  value?: string | null;
  /** The value as HTML (a DataFrame's table), shown in place of its repr. */
  valueHtml?: string;
  error?: string;
  /** Perennial's notices and losses: a restore, a variable a swap did not keep. */
  notes: ResultNote[];
  images: Array<{ mimeType: string; data: string }>;
  runtimeMs?: number;
  done: boolean;
}

type PanelMessage = { type: 'reset'; entries: Entry[] } | { type: 'entry'; entry: Entry };

/** Instructions kept for a panel that is closed and opened again. */
const KEPT_ENTRIES = 100;

/**
 * "Perennial Output": a webview showing, per instruction, the code, its output as it streams, the
 * value, a readable traceback, Perennial's notices and losses, and images inline, with Copy value
 * and Clear. It follows the theme, and its Content Security Policy allows nothing remote. HTML the
 * code displayed (a DataFrame's table) shows in a sandboxed frame: no scripts, no forms, an origin
 * of its own, and the panel's policy, so nothing remote either.
 */
export class OutputPanel implements vscode.Disposable {
  #panel?: vscode.WebviewPanel;
  #entries: Entry[] = [];
  #nextId = 1;
  readonly #subscription = vscode.commands.registerCommand(COMMANDS.showOutput, () => this.show(false));

  constructor(private readonly icon: vscode.Uri) {}

  /** Opens the panel beside the editor (keeping the editor's focus unless asked). */
  show(preserveFocus = true): void {
    if (this.#panel) {
      this.#panel.reveal(undefined, preserveFocus);
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      'perennial.output',
      'Perennial Output',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus },
      { enableScripts: true, localResourceRoots: [] },
    );
    panel.iconPath = this.icon;
    panel.webview.html = html(randomBytes(16).toString('base64'));
    panel.webview.onDidReceiveMessage(async (message: { type: string; text?: string }) => {
      if (message.type === 'ready') void panel.webview.postMessage({ type: 'reset', entries: this.#entries } satisfies PanelMessage);
      else if (message.type === 'copy' && typeof message.text === 'string') {
        await vscode.env.clipboard.writeText(message.text);
        void vscode.window.setStatusBarMessage('Perennial: value copied', 2000);
      } else if (message.type === 'clear') this.clear();
    });
    panel.onDidDispose(() => (this.#panel = undefined));
    this.#panel = panel;
  }

  clear(): void {
    this.#entries = [];
    void this.#panel?.webview.postMessage({ type: 'reset', entries: [] } satisfies PanelMessage);
  }

  /** A new instruction; the returned functions stream its output and end it with its result. */
  start(
    machine: string,
    code: string,
  ): { output(stream: 'stdout' | 'stderr', text: string): void; finish(result: ExecResult): void; fail(message: string): void } {
    this.show();
    const entry: Entry = { id: this.#nextId++, machine, code, output: [], notes: [], images: [], done: false };
    this.#entries.push(entry);
    this.#entries = this.#entries.slice(-KEPT_ENTRIES);
    const update = () => void this.#panel?.webview.postMessage({ type: 'entry', entry } satisfies PanelMessage);
    update();
    return {
      output: (stream, text) => {
        const last = entry.output.at(-1);
        if (last && 'stream' in last && last.stream === stream) last.text += text;
        else entry.output.push({ stream, text });
        update();
      },
      finish: (result) => {
        const view = viewResult(result, 'Give code longer with the setting perennial.instructionTimeoutSeconds (0: no limit).');
        // What the code displayed, after its output; its images are among the images.
        const bundles = (result.data?.display ?? []).filter((d): d is DisplayBundle => 'data' in d);
        for (const bundle of bundles.filter((b) => !b.result)) {
          const html = bundle.data['text/html'];
          const text = bundle.data['text/plain'];
          if (typeof html === 'string') entry.output.push({ html });
          else if (typeof text === 'string') entry.output.push({ stream: 'stdout', text: `${text}\n` });
        }
        if (view.error !== null) entry.error = view.error;
        else entry.value = view.value;
        const valueHtml = bundles.find((b) => b.result)?.data['text/html'];
        if (typeof valueHtml === 'string') entry.valueHtml = valueHtml;
        entry.notes = view.notes;
        entry.images = view.images;
        entry.runtimeMs = result.runtime_ms;
        entry.done = true;
        update();
      },
      fail: (message) => {
        entry.error = message;
        entry.done = true;
        update();
      },
    };
  }

  dispose(): void {
    this.#subscription.dispose();
    this.#panel?.dispose();
  }
}

function html(nonce: string): string {
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<style nonce="${nonce}">
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); background: var(--vscode-editor-background); padding: 0 12px; }
header { position: sticky; top: 0; background: var(--vscode-editor-background); padding: 6px 0; display: flex; justify-content: flex-end; border-bottom: 1px solid var(--vscode-panel-border); }
button { font: inherit; color: var(--vscode-button-secondaryForeground); background: var(--vscode-button-secondaryBackground); border: none; padding: 2px 8px; border-radius: 2px; cursor: pointer; }
button:hover { background: var(--vscode-button-secondaryHoverBackground); }
.entry { border-bottom: 1px solid var(--vscode-panel-border); padding: 8px 0; }
.meta { color: var(--vscode-descriptionForeground); font-size: 0.9em; display: flex; gap: 8px; align-items: center; }
pre { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size); white-space: pre-wrap; word-break: break-word; margin: 4px 0; }
.code { background: var(--vscode-textCodeBlock-background); padding: 4px 6px; }
.stderr { color: var(--vscode-terminal-ansiYellow); }
.value::before { content: 'Out: '; color: var(--vscode-descriptionForeground); }
.error { color: var(--vscode-errorForeground); }
.note { border-left: 3px solid var(--vscode-editorWarning-foreground); padding: 2px 8px; margin: 4px 0; }
.note.lost { color: var(--vscode-editorWarning-foreground); }
img { max-width: 100%; background: white; display: block; margin: 4px 0; }
iframe.html { width: 100%; height: 16em; resize: vertical; border: 1px solid var(--vscode-panel-border); background: white; display: block; margin: 4px 0; }
.empty { color: var(--vscode-descriptionForeground); padding: 12px 0; }
</style></head>
<body>
<header><button id="clear" title="Clear the panel">Clear</button></header>
<main id="entries"><p class="empty">Run code with "Perennial: Run Selection or Line" or "Run Cell"; it shows here.</p></main>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
const main = document.getElementById('entries');
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
function render(entry) {
  const box = el('section', 'entry');
  box.id = 'entry-' + entry.id;
  const meta = el('div', 'meta', entry.machine + (entry.done ? (entry.runtimeMs !== undefined ? ' · ' + entry.runtimeMs + ' ms' : '') : ' · running…'));
  if (entry.done && entry.value != null) {
    const copy = el('button', '', 'Copy value');
    copy.addEventListener('click', () => vscode.postMessage({ type: 'copy', text: entry.value }));
    meta.append(copy);
  }
  box.append(meta, el('pre', 'code', entry.code));
  for (const part of entry.output) box.append(part.html !== undefined ? frame(part.html) : el('pre', part.stream, part.text));
  for (const image of entry.images) { const img = el('img'); img.src = 'data:' + image.mimeType + ';base64,' + image.data; img.alt = 'figure'; box.append(img); }
  if (entry.error) box.append(el('pre', 'error', entry.error));
  else if (entry.valueHtml !== undefined) box.append(frame(entry.valueHtml));
  else if (entry.value != null) box.append(el('pre', 'value', entry.value));
  for (const note of entry.notes) box.append(el('div', 'note ' + note.kind, note.text));
  return box;
}
// An empty sandbox: the HTML runs no script, submits no form and has an origin of its own.
function frame(html) { const f = el('iframe', 'html'); f.setAttribute('sandbox', ''); f.title = 'HTML the code displayed'; f.srcdoc = html; return f; }
function place(entry) {
  main.querySelector('.empty')?.remove();
  const next = render(entry);
  const old = document.getElementById(next.id);
  if (old) old.replaceWith(next); else main.append(next);
  next.scrollIntoView({ block: 'end' });
}
window.addEventListener('message', ({ data }) => {
  if (data.type === 'reset') { main.replaceChildren(); if (!data.entries.length) main.append(el('p', 'empty', 'Cleared.')); data.entries.forEach(place); }
  else if (data.type === 'entry') place(data.entry);
});
document.getElementById('clear').addEventListener('click', () => vscode.postMessage({ type: 'clear' }));
vscode.postMessage({ type: 'ready' });
</script></body></html>`;
}
