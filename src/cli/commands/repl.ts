import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { Backend } from '../../shared/backend.ts';
import type { EngineName } from '../../shared/types.ts';
import { UnsupportedByBackendError } from '../../client/forevervm-client.ts';
import { withBackend, type CliContext } from '../context.ts';
import { printChunk, printResult } from '../result-printer.ts';

const HISTORY_SIZE = 1000;

export interface ReplCommandOptions {
  engine?: EngineName;
  timeout?: number;
  images?: string;
}

/**
 * `perennial repl [NAME]`: an interactive prompt on a machine (a new one without NAME). Lines
 * gather until they form a whole statement, as in Python's own prompt; Ctrl-C interrupts the
 * running cell or drops the line being typed; Ctrl-D leaves, and the machine stays.
 */
export async function replCommand(ctx: CliContext, name: string | undefined, options: ReplCommandOptions): Promise<void> {
  await withBackend(ctx, async (backend) => {
    const machine = name ?? (await backend.create({ engine: options.engine })).name;
    ctx.term.err.write(`Perennial REPL on machine ${machine}. Ctrl-C interrupts, Ctrl-D leaves (the machine stays).\n`);
    const isTerminal = Boolean((ctx.stdin as NodeJS.ReadStream).isTTY);
    const rl = createInterface({
      input: ctx.stdin,
      output: ctx.term.out,
      terminal: isTerminal,
      history: await loadHistory(ctx.historyFile),
      historySize: HISTORY_SIZE,
      removeHistoryDuplicates: true,
    });
    let history: string[] = [];
    rl.on('history', (entries: string[]) => (history = entries));

    let buffer: string[] = [];
    let running = false;
    const onInterrupt = () => {
      if (running) {
        void backend.interrupt(machine);
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
        if ((await completeness(backend, machine, code)) === 'incomplete') {
          prompt('... ');
          continue;
        }
        buffer = [];
        running = true;
        try {
          const { seq, result } = await backend.run(machine, code, {
            timeoutSeconds: options.timeout,
            onOutput: (chunk) => printChunk(ctx.term, chunk),
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

async function completeness(backend: Backend, machine: string, code: string): Promise<'complete' | 'incomplete' | 'invalid'> {
  if (backend.isComplete) {
    try {
      return await backend.isComplete(machine, code);
    } catch (error) {
      if (!(error instanceof UnsupportedByBackendError)) throw error;
    }
  }
  // Without the kernel's judgement: a block opener or an open bracket asks for more, and a block
  // ends at an empty line, as in Python's prompt.
  const lines = code.split('\n');
  const last = lines.at(-1) ?? '';
  if (lines.length > 1 && last.trim() === '') return 'complete';
  const depth = [...code].reduce((d, c) => d + ('([{'.includes(c) ? 1 : ')]}'.includes(c) ? -1 : 0), 0);
  if (depth > 0 || /[:\\]\s*$/.test(last)) return 'incomplete';
  return lines.length > 1 ? 'incomplete' : 'complete';
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
