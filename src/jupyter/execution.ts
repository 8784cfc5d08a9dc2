import { tracebackException } from '../shared/result-format.ts';
import { ForeverVMError } from '../shared/forevervm-error.ts';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { InputRequest } from '../shared/types.ts';
import type { NotebookMachine } from '../notebooks/notebook-machine.ts';
import { CellMessages, type CellError, type Publish } from './cell-messages.ts';
import type { Content } from './messages.ts';
import type { ExecuteRequest } from './requests.ts';

/** What a cell's execution needs of its kernel. */
export interface ExecutionContext {
  client(): Promise<PerennialClient>;
  /** The notebook's machine (found, or made). */
  machine(): Promise<NotebookMachine>;
  /** What the kernel's first shown cell says of the machine: the notes, once. */
  takeNotes(machine: NotebookMachine): string[];
  /** The number of the last stored execution, and the one a stored execution now takes. */
  count: { value: number };
  /** Asks the front end that sent the cell (`input()`), on its stdin channel. */
  ask(request: InputRequest, signal: AbortSignal): Promise<string>;
  /** Whether a cell of this kernel runs on the machine now. */
  running(on: boolean): void;
}

/** How an execution ended: its reply, and whether it failed (the cells queued after it are aborted) or its machine was gone. */
export interface ExecutionOutcome {
  reply: Content;
  failed: boolean;
  /** The machine was deleted meanwhile: the notebook's is looked for again at the next cell. */
  machineGone: boolean;
}

/**
 * One `execute_request`: the cell's input published, then what Perennial says of the machine (the
 * first shown cell), then the cell run on the machine with its output as iopub messages, its
 * questions asked on stdin, its value or error; `user_expressions` evaluated after it. A silent
 * cell shows nothing and takes no number.
 */
export async function executeCell(request: ExecuteRequest, publish: Publish, context: ExecutionContext): Promise<ExecutionOutcome> {
  const { code, silent } = request;
  const counted = !silent && request.store_history !== false;
  const shown: Publish = silent ? () => {} : publish;
  const cell = new CellMessages(shown);
  let count = context.count.value;
  let inputSent = false;
  let notes: string[] = [];
  // The cell's input first, as front ends expect, then what Perennial says before its output.
  const sendInput = () => {
    if (inputSent) return;
    inputSent = true;
    shown('execute_input', { code, execution_count: count });
    cell.notes(notes);
  };
  try {
    const machine = await context.machine();
    const client = await context.client();
    // A silent execute (a front end's own) shows nothing: the notes wait for the first cell shown.
    if (!silent) notes = context.takeNotes(machine);
    if (!code.trim()) {
      sendInput();
      return { reply: { status: 'ok', execution_count: count, payload: [], user_expressions: {} }, failed: false, machineGone: false };
    }
    context.running(true);
    const { result } = await client
      .run(machine.info.name, code, {
        timeoutSeconds: 0,
        onQueued: (seq) => {
          // Counted from 1 as in Jupyter (and in Perennial's VS Code notebooks): the machine's own numbers start at 0.
          if (counted) count = context.count.value = seq + 1;
          sendInput();
        },
        onOutput: (chunk) => cell.output(chunk),
        onDisplay: (entry) => cell.display(entry),
        ...(request.allow_stdin ? { onInput: (question: InputRequest, signal: AbortSignal) => context.ask(question, signal) } : {}),
      })
      .finally(() => context.running(false));
    const error = cell.end(result, count);
    if (error) return failure(error, count, false);
    const expressions = await userExpressions(client, machine.info.name, request.user_expressions);
    const next = result.data?.next_input;
    const payload = [...cell.pages, ...(next ? [{ source: 'set_next_input', ...next }] : [])];
    return { reply: { status: 'ok', execution_count: count, payload, user_expressions: expressions }, failed: false, machineGone: false };
  } catch (problem) {
    // The machine could not be reached or made: the cell says why, as an exception of its own.
    sendInput();
    const message = (problem as Error).message;
    const error = { ename: 'PerennialError', evalue: message, traceback: [`PerennialError: ${message}`] };
    shown('error', error);
    return failure(error, count, problem instanceof ForeverVMError && problem.code === 'MachineNotFound');
  }
}

function failure(error: CellError, count: number, machineGone: boolean): ExecutionOutcome {
  return { reply: { status: 'error', execution_count: count, ...error }, failed: true, machineGone };
}

/** `user_expressions`: each evaluated on the machine after the cell, its value as text. */
async function userExpressions(client: PerennialClient, name: string, expressions: Record<string, string>): Promise<Content> {
  const values: Content = {};
  for (const [key, expression] of Object.entries(expressions)) {
    const { result } = await client.run(name, expression, { timeoutSeconds: 0 });
    if ('error' in result) {
      const { name: ename, message: evalue } = tracebackException(result.error);
      values[key] = { status: 'error', ename, evalue, traceback: result.error.trimEnd().split('\n') };
    } else values[key] = { status: 'ok', data: { 'text/plain': result.value ?? 'None' }, metadata: {} };
  }
  return values;
}
