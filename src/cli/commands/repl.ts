import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { EngineName } from '../../shared/requests.ts';
import { withClient, type CliContext } from '../context.ts';
import { printChunk, printResult } from '../result-printer.ts';
import { TerminalQuestions } from '../terminal-questions.ts';

const HISTORY_SIZE = 1000;
const INDENT = '    ';

export interface ReplCommandOptions {
  engine?: EngineName;
  timeout?: number;
  images?: string;
}

/**
 * `perennial repl [NAME]`: an interactive prompt on a machine (a new one without NAME). Lines
 * gather until they form a whole statement, as in Python's own prompt (continuation lines show
 * `... `); Tab completes from the machine's namespace, or indents at the start of a line; Ctrl-C
 * interrupts the running cell or drops the line being typed; Ctrl-D leaves, and the machine stays.
 */
export async function replCommand(ctx: CliContext, name: string | undefined, options: ReplCommandOptions): Promise<void> {
  await withClient(ctx, async (client) => {
    const machine = name ?? (await client.create({ engine: options.engine })).name;
    ctx.term.err.write(`Perennial REPL on machine ${machine}. Ctrl-C interrupts, Ctrl-D leaves (the machine stays).\n`);
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
    const prompt = (text: string) => {
      rl.setPrompt(text);
      rl.prompt();
    };
    rl.on('SIGINT', onInterrupt);
    process.on('SIGINT', onInterrupt);
    try {
      prompt('>>> ');
      for await (const line of rl) {
        buffer.push(line);
        const code = buffer.join('\n');
        if (!code.trim()) {
          buffer = [];
          prompt('>>> ');
          continue;
        }
        if ((await client.isComplete(machine, code)) === 'incomplete') {
          prompt('... ');
          continue;
        }
        buffer = [];
        running = true;
        try {
          const { seq, result } = await client.run(machine, code, {
            timeoutSeconds: options.timeout,
            onOutput: (chunk) => {
              if (!questions.isEcho(chunk.data)) printChunk(ctx.term, chunk);
            },
            onInput: questions.answer,
          });
          await printResult(ctx.term, result, seq, options.images);
        } catch (error) {
          ctx.term.err.write(`perennial: ${(error as Error).message}\n`);
        } finally {
          running = false;
        }
        prompt('>>> ');
      }
    } finally {
      process.off('SIGINT', onInterrupt);
      rl.close();
      if (isTerminal) ctx.term.out.write('\n');
      await saveHistory(ctx.historyFile, history);
    }
  });
}

async function loadHistory(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).slice(0, HISTORY_SIZE);
}

async function saveHistory(file: string, entries: string[]): Promise<void> {
  if (!entries.length) return;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, entries.slice(0, HISTORY_SIZE).join('\n') + '\n', { mode: 0o600 });
}
