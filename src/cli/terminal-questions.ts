import { createInterface, type Interface } from 'node:readline';
import type { InputAnswerer } from '../shared/types.ts';

/**
 * A running cell's `input()` answered at the terminal, as Python's own prompt would: the question
 * is asked on `rl` (the REPL's own line editor, or one made on stdin for `exec`), a password
 * without echo. The kernel repeats the question and answer in the cell's output for others who
 * read it; `isEcho` tells the line that repeats what this terminal already shows.
 */
export class TerminalQuestions {
  #echo?: string;

  constructor(private readonly rl: () => Interface) {}

  /** A line editor on `stdin` for a command that has none (`exec`), made at the first question. */
  static onStdin(stdin: NodeJS.ReadableStream, output: NodeJS.WritableStream): TerminalQuestions {
    let rl: Interface | undefined;
    const questions = new TerminalQuestions(() => (rl ??= createInterface({ input: stdin, output, terminal: Boolean((stdin as NodeJS.ReadStream).isTTY) })));
    questions.close = () => rl?.close();
    return questions;
  }

  close: () => void = () => {};

  readonly answer: InputAnswerer = ({ prompt, password }, signal) =>
    new Promise((resolve, reject) => {
      const rl = this.rl();
      const ended = () => reject(new Error('the terminal closed its input'));
      rl.once('close', ended);
      const muted = password ? mute(rl, prompt) : () => {};
      rl.question(prompt, { signal }, (answer) => {
        rl.off('close', ended);
        muted();
        if (password) rl.write('\n');
        this.#echo = prompt + (password ? '' : answer);
        resolve(answer);
      });
      signal.addEventListener('abort', () => {
        rl.off('close', ended);
        muted();
        reject(new Error('the cell ended before the answer came'));
      });
    });

  /** Whether an output line is the kernel's repeat of the last question and answer (once). */
  isEcho(line: string): boolean {
    if (this.#echo === undefined || line !== this.#echo) return false;
    this.#echo = undefined;
    return true;
  }
}

/** Stops the line editor from showing what is typed after the prompt; returns the undo. */
function mute(rl: Interface, prompt: string): () => void {
  // readline has no public switch for echo: its one output path is this method.
  const editor = rl as unknown as { _writeToOutput(text: string): void };
  const write = editor._writeToOutput.bind(editor);
  editor._writeToOutput = (text: string) => {
    if (text.startsWith(prompt)) write(prompt);
  };
  return () => void (editor._writeToOutput = write);
}
