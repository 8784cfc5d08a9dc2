import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import type { EngineName } from '../../shared/requests.ts';
import { nextLineIndent } from '../../shared/python-indent.ts';
import { describeRuntime } from '../../shared/result-format.ts';
import { isErrorResult, type ExecResult, type MachineInfo } from '../../shared/types.ts';
import { ExitError } from '../errors.ts';
import { backendFlags, newMachineOptions, withClient, type CliContext } from '../context.ts';
import { figuresDir, printChunk, printResult } from '../result-printer.ts';
import { TerminalQuestions } from '../terminal-questions.ts';

const HISTORY_SIZE = 1000;
const INDENT = '    ';

export interface ReplCommandOptions {
  engine?: EngineName;
  python?: string;
  timeout?: number;
  images?: string;
}

/**
 * `perennial repl [NAME]`: an interactive prompt on a machine (a new one without NAME), as
 * Python's own. Lines gather until they form a whole statement (continuation lines show `... `,
 * indented as the statement needs in a terminal); a block pasted into a terminal runs whole, blank
 * lines and all; Tab completes from the machine's
 * namespace, or indents at the start of a line; Ctrl-C interrupts the running statement or drops
 * the line being typed; `exit()`, `quit()`, `sys.exit()` and Ctrl-D leave, and the machine stays.
 * A statement runs as long as it takes, unless `--timeout` says otherwise.
 */
export async function replCommand(ctx: CliContext, name: string | undefined, options: ReplCommandOptions): Promise<void> {
  await withClient(ctx, async (client) => {
    // A machine that does not exist is said at once, not at the first statement.
    let info = name ? await client.get(name) : await client.create(newMachineOptions(options));
    const machine = info.name;
    if (!info.runtime && info.engine !== 'forevervm') {
      // Its Python is known once it runs: start it now, as the first statement would.
      await client.isComplete(machine, '');
      info = await client.get(machine);
    }
    ctx.term.err.write(`Perennial REPL on machine ${machine}: ${describeMachine(info)}. Ctrl-C interrupts; exit() or Ctrl-D leaves, and the machine stays.\n`);
    const isTerminal = Boolean((ctx.stdin as NodeJS.ReadStream).isTTY);
    const rl = createInterface({
      input: ctx.stdin,
      output: ctx.term.out,
      terminal: isTerminal,
      history: await loadHistory(ctx.historyFile),
      historySize: HISTORY_SIZE,
      removeHistoryDuplicates: true,
      completer: (line: string, answer: (error: null, result: [string[], string]) => void) => {
        // Before any code, Tab indents, as in Python's prompt.
        if (!line.trim()) return answer(null, [[`${line}${INDENT}`], line]);
        client.complete(machine, line).then(
          ({ matches, start }) => answer(null, [matches, line.slice(start)]),
          () => answer(null, [[], line]),
        );
      },
    });
    const lines = new TypedLines(rl, ctx.stdin, isTerminal ? ctx.term.out : undefined);
    const questions = new TerminalQuestions(() => rl);
    let history: string[] = [];
    rl.on('history', (entries: string[]) => (history = entries));

    let buffer: string[] = [];
    let running = false;
    const onInterrupt = () => {
      if (running) {
        void client.interrupt(machine);
        return;
      }
      buffer = [];
      // Drop what was typed, as Python's prompt does.
      rl.write(null, { ctrl: true, name: 'e' });
      rl.write(null, { ctrl: true, name: 'u' });
      ctx.term.out.write('\nKeyboardInterrupt\n');
      prompt('>>> ');
    };
    /** `indent`: typed ahead on the line, as if by the person (a terminal's only: readline reads it as input elsewhere). */
    const prompt = (text: string, indent = '') => {
      rl.setPrompt(text);
      rl.prompt();
      if (indent && isTerminal) rl.write(indent);
    };
    rl.on('SIGINT', onInterrupt);
    process.on('SIGINT', onInterrupt);
    let exit: ExitError | undefined;
    try {
      prompt('>>> ');
      while (!exit) {
        const typed = await lines.next();
        if (!typed) break;
        // A line of spaces alone (the indentation typed ahead, kept) is a blank line: it ends the block.
        if (typed.kind === 'line') buffer.push(typed.text.trim() ? typed.text : '');
        // Inside a paste, a blank line does not end the block: the paste's end does.
        if (typed.kind === 'line' && typed.pasted) continue;
        const code = buffer.join('\n');
        if (!code.trim()) {
          buffer = [];
          if (typed.kind === 'line') prompt('>>> ');
          continue;
        }
        // A paste's end ends its last block too, as the blank line after it would.
        if ((await client.isComplete(machine, typed.kind === 'paste-end' ? `${code}\n` : code)) === 'incomplete') {
          // After a typed line only, with nothing typed after it: a pasted block brings its own indentation.
          prompt('... ', typed.kind === 'line' && !lines.ahead ? nextLineIndent(code) : '');
          continue;
        }
        buffer = [];
        running = true;
        try {
          const { seq, result } = await client.run(machine, code, {
            // As in Python's own prompt, a statement runs as long as it takes unless told otherwise.
            timeoutSeconds: options.timeout ?? 0,
            onOutput: (chunk) => {
              if (!questions.isEcho(chunk.data)) printChunk(ctx.term, chunk);
            },
            onInput: questions.answer,
          });
          exit = systemExit(result);
          if (!exit) await printResult(ctx.term, result, seq, figuresDir(machine, options.images));
        } catch (error) {
          ctx.term.err.write(`perennial: ${(error as Error).message}\n`);
        } finally {
          running = false;
        }
        if (!exit) prompt('>>> ');
      }
    } finally {
      process.off('SIGINT', onInterrupt);
      lines.close();
      rl.close();
      if (isTerminal && !exit) ctx.term.out.write('\n');
      await saveHistory(ctx.historyFile, history);
    }
    // However it ended, the machine stays: say how to come back to it.
    ctx.term.err.write(`Machine ${machine} keeps its state; come back with: perennial${backendFlags(ctx)} repl ${machine}\n`);
    if (exit) throw exit;
  });
}

/** "sandbox engine, Pyodide 314.0.7 (Python 3.14.2)". */
function describeMachine({ engine, runtime }: MachineInfo): string {
  return engine === 'forevervm' ? 'hosted ForeverVM' : `${engine} engine, ${describeRuntime(runtime)}`;
}

/**
 * How the REPL ends when a statement raised SystemExit (`exit()`, `quit()`, `sys.exit(n)`), as
 * Python's does: with the status it gave, or 1 and its message; undefined for any other result.
 */
function systemExit(result: ExecResult): ExitError | undefined {
  if (!isErrorResult(result)) return undefined;
  const match = /^SystemExit(?::\s?(.*))?$/.exec(result.error.trimEnd().split('\n').at(-1) ?? '');
  if (!match) return undefined;
  const argument = match[1] ?? '';
  if (argument === '' || argument === 'None') return new ExitError(0);
  if (/^-?\d+$/.test(argument)) return new ExitError(Number(argument) & 0xff);
  return new ExitError(1, argument);
}

/** A line typed (or pasted) at the prompt, or the end of a paste. */
type Typed = { kind: 'line'; text: string; pasted: boolean } | { kind: 'paste-end' };

/**
 * The lines of the prompt, each marked when it came in a paste. A terminal is put in bracketed
 * paste mode, which marks a paste's start and end, so that a pasted block with blank lines in it
 * is one statement, as in IPython and Python 3.13's REPL. (readline reads ahead of the REPL, so
 * a line is marked as it arrives, not when the REPL takes it.)
 */
class TypedLines {
  #queue: Typed[] = [];
  #waiting?: (typed: Typed | null) => void;
  #pasting = false;
  #closed = false;

  constructor(
    private readonly rl: Interface,
    private readonly input: NodeJS.ReadableStream,
    private readonly terminal?: NodeJS.WritableStream,
  ) {
    rl.on('line', (text: string) => this.#push({ kind: 'line', text, pasted: this.#pasting }));
    rl.on('close', () => this.#end());
    input.on('keypress', this.#onKey);
    terminal?.write(BRACKETED_PASTE_ON);
  }

  /** Whether more is typed already: lines read ahead, or a line begun. */
  get ahead(): boolean {
    return this.#queue.length > 0 || this.rl.line.length > 0;
  }

  next(): Promise<Typed | null> {
    const typed = this.#queue.shift();
    if (typed) return Promise.resolve(typed);
    if (this.#closed) return Promise.resolve(null);
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  /** Gives the terminal back as it was. */
  close(): void {
    this.input.off('keypress', this.#onKey);
    this.terminal?.write(BRACKETED_PASTE_OFF);
    this.#end();
  }

  readonly #onKey = (_text: string, key?: { name?: string }) => {
    if (key?.name === 'paste-start') this.#pasting = true;
    else if (key?.name === 'paste-end') {
      this.#pasting = false;
      // A paste that ends inside a line leaves it for the person to finish.
      if (!this.rl.line) this.#push({ kind: 'paste-end' });
    }
  };

  #push(typed: Typed): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) waiting(typed);
    else this.#queue.push(typed);
  }

  #end(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#waiting?.(null);
    this.#waiting = undefined;
  }
}

const BRACKETED_PASTE_ON = '\x1b[?2004h';
const BRACKETED_PASTE_OFF = '\x1b[?2004l';

async function loadHistory(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).slice(0, HISTORY_SIZE);
}

async function saveHistory(file: string, entries: string[]): Promise<void> {
  if (!entries.length) return;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, entries.slice(0, HISTORY_SIZE).join('\n') + '\n', { mode: 0o600 });
}
