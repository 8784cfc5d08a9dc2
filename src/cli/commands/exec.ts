import { text } from 'node:stream/consumers';
import type { EngineName } from '../../shared/requests.ts';
import { isErrorResult } from '../../shared/types.ts';
import { newMachineOptions, withClient, type CliContext } from '../context.ts';
import { ExitError } from '../errors.ts';
import { figuresDir, printChunk, printResult } from '../result-printer.ts';
import { TerminalQuestions } from '../terminal-questions.ts';

export interface ExecCommandOptions {
  machine?: string;
  engine?: EngineName;
  python?: string;
  timeout?: number;
  images?: string;
}

/**
 * `perennial exec`: runs code (or `-` for stdin) on a machine, streaming its output, then prints the
 * value. Exits 1 on a Python error, 130 when interrupted with Ctrl-C, 3 when the output was cut at
 * the server's cap.
 */
export async function execCommand(ctx: CliContext, code: string, options: ExecCommandOptions): Promise<void> {
  const source = code === '-' ? await text(ctx.stdin) : code;
  await withClient(ctx, async (client) => {
    let name = options.machine;
    if (!name) {
      name = (await client.create(newMachineOptions(options))).name;
      ctx.term.err.write(`machine: ${name}\n`);
    }
    const machine = name;
    let interrupted = false;
    const onSigint = () => {
      interrupted = true;
      void client.interrupt(machine);
    };
    process.on('SIGINT', onSigint);
    // With the code on stdin, nothing is left there to answer from.
    const questions = code === '-' ? undefined : TerminalQuestions.onStdin(ctx.stdin, ctx.term.err);
    try {
      const { seq, result } = await client.run(machine, source, {
        timeoutSeconds: options.timeout,
        onOutput: (chunk) => {
          if (!questions?.isEcho(chunk.data)) printChunk(ctx.term, chunk);
        },
        onInput: questions?.answer,
      });
      await printResult(ctx.term, result, seq, figuresDir(machine, options.images));
      if (isErrorResult(result)) throw new ExitError(interrupted ? 130 : 1);
      // What was printed is not all the code wrote: a script that saves it must not take it for whole.
      if (result.data?.truncated)
        throw new ExitError(3, `perennial: the output was cut at ${result.data.truncated.limit} bytes, so what was printed is incomplete (exit status 3)`);
    } finally {
      process.off('SIGINT', onSigint);
      questions?.close();
    }
  });
}
