import type { RawData, WebSocket } from 'ws';
import type { CallerMachines } from './caller-machines.ts';
import type { DisplayEntry, InputAnswerer, ReplServerMessage } from '../shared/types.ts';
import { InvalidRequestError, ReplClientMessage, parseRequest, type ReplExecMessage } from '../shared/requests.ts';
import { toForeverVMError } from './machine-answers.ts';

/**
 * ForeverVM's WebSocket REPL on one machine (`/v1/machine/{name|new}/repl`): `connected` first,
 * then for each `exec` an `exec_received`, the output chunks and the result. Instructions keep
 * running when the socket closes; a client that reconnects finds the machine as it left it. An
 * instruction sent with `input: true` asks this socket its `input()` questions, and one sent with
 * `displays: true` sends what it displays as it displays it.
 */
export function serveRepl(socket: WebSocket, machines: CallerMachines, requested: string): void {
  const { manager } = machines;
  const send = (message: ReplServerMessage) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  // The official SDK sends its first exec as soon as the socket opens, before `connected`: frames
  // wait for the machine (created or found), and are then taken in the order they came.
  const machine = open();
  socket.on('message', (data, isBinary) => {
    void machine.then((name) => name !== undefined && accept(name, data, isBinary));
  });
  // The questions this socket's instructions asked, by number, until answered.
  const questions = new Map<number, { instruction: number; resolve(value: string): void; reject(error: Error): void }>();
  let asked = 0;
  socket.on('close', () => {
    for (const question of questions.values()) question.reject(new Error('the client that sent this cell went away'));
    questions.clear();
  });

  function asker(instruction: () => number | undefined): InputAnswerer {
    return (request, signal) =>
      new Promise((resolve, reject) => {
        if (socket.readyState !== socket.OPEN) return reject(new Error('the client that sent this cell went away'));
        const n = ++asked;
        const seq = instruction() ?? -1;
        questions.set(n, { instruction: seq, resolve, reject });
        signal.addEventListener('abort', () => {
          if (!questions.delete(n)) return;
          send({ type: 'input_cancel', instruction_id: seq, n });
          reject(new Error('the cell ended before the answer came'));
        });
        send({ type: 'input_request', instruction_id: seq, n, ...request });
      });
  }

  async function open(): Promise<string | undefined> {
    try {
      const name = requested === 'new' ? (await machines.create()).name : (await machines.require(requested, 'run'), manager.get(requested).name);
      leaves(name);
      send({ type: 'connected', machine_name: name });
      return name;
    } catch (error) {
      const failure = toForeverVMError(error);
      send({ type: 'error', code: failure.code, id: failure.id, message: failure.message });
      socket.close(1008, failure.message.slice(0, 120));
      return undefined;
    }
  }

  /** When the machine moves to another node, the socket closes: the client connects again, and is sent where it went. */
  function leaves(name: string): void {
    const left = (gone: string) => gone === name && socket.close(1012, `machine ${name} moved to another node: connect again`);
    manager.on('left', left);
    socket.once('close', () => manager.off('left', left));
  }

  function accept(name: string, data: RawData, isBinary: boolean): void {
    let message: ReplClientMessage;
    try {
      if (isBinary) throw new Error('binary frames are not part of the protocol');
      message = parseRequest(ReplClientMessage, JSON.parse(data.toString()));
    } catch (error) {
      send({ type: 'message', level: 'error', message: error instanceof InvalidRequestError ? error.message : `Invalid request: ${(error as Error).message}` });
      send({ type: 'error', code: 'BadRequest', id: null });
      return;
    }
    if (message.type === 'exec') return void run(name, message);
    const question = questions.get(message.n);
    // An answer to a question no longer open (the cell ended) is dropped.
    if (!question || question.instruction !== message.instruction_id) return;
    questions.delete(message.n);
    if ('value' in message) question.resolve(message.value);
    else question.reject(new Error(message.error));
  }

  async function run(name: string, message: ReplExecMessage): Promise<void> {
    let queued: number | undefined;
    try {
      const onInput = message.input ? asker(() => queued) : undefined;
      const onDisplay = message.displays ? (entry: DisplayEntry) => send({ type: 'display', instruction_id: queued ?? -1, entry }) : undefined;
      const { seq } = await machines.exec(name, message.instruction.code, { timeoutSeconds: message.instruction.timeout_seconds, onInput, onDisplay });
      queued = seq;
      send({ type: 'exec_received', seq, request_id: message.request_id });
      const result = await machines.follow(name, seq, (chunk) => send({ type: 'output', chunk, instruction_id: seq }));
      send({ type: 'result', instruction_id: seq, result });
    } catch (error) {
      // The reason first, as a message (the ForeverVM protocol's error frame carries only a code).
      const failure = toForeverVMError(error);
      send({ type: 'message', level: 'error', message: failure.message });
      send({ type: 'error', code: failure.code, id: failure.id, message: failure.message });
    }
  }
}
