import type { RawData, WebSocket } from 'ws';
import type { MachineManager } from '../machines/machine-manager.ts';
import type { ReplServerMessage } from '../shared/types.ts';
import { InvalidRequestError, ReplExecMessage, parseRequest } from '../shared/requests.ts';
import { toForeverVMError } from './machine-answers.ts';

/**
 * ForeverVM's WebSocket REPL on one machine (`/v1/machine/{name|new}/repl`): `connected` first,
 * then for each `exec` an `exec_received`, the output chunks and the result. Instructions keep
 * running when the socket closes; a client that reconnects finds the machine as it left it.
 */
export function serveRepl(socket: WebSocket, manager: MachineManager, requested: string): void {
  const send = (message: ReplServerMessage) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };
  // The official SDK sends its first exec as soon as the socket opens, before `connected`: frames
  // wait for the machine (created or found), and are then taken in the order they came.
  const machine = open();
  socket.on('message', (data, isBinary) => {
    void machine.then((name) => name !== undefined && accept(name, data, isBinary));
  });

  async function open(): Promise<string | undefined> {
    try {
      const name = requested === 'new' ? (await manager.create()).name : manager.get(requested).name;
      send({ type: 'connected', machine_name: name });
      return name;
    } catch (error) {
      const failure = toForeverVMError(error);
      send({ type: 'error', code: failure.code, id: failure.id });
      socket.close(1008, failure.message.slice(0, 120));
      return undefined;
    }
  }

  function accept(name: string, data: RawData, isBinary: boolean): void {
    let message: ReplExecMessage;
    try {
      if (isBinary) throw new Error('binary frames are not part of the protocol');
      message = parseRequest(ReplExecMessage, JSON.parse(data.toString()));
    } catch (error) {
      send({ type: 'message', level: 'error', message: error instanceof InvalidRequestError ? error.message : `Invalid request: ${(error as Error).message}` });
      send({ type: 'error', code: 'BadRequest', id: null });
      return;
    }
    void run(name, message);
  }

  async function run(name: string, message: ReplExecMessage): Promise<void> {
    try {
      const { seq } = manager.exec(name, message.instruction.code, { timeoutSeconds: message.instruction.timeout_seconds });
      send({ type: 'exec_received', seq, request_id: message.request_id });
      const result = await manager.follow(name, seq, (chunk) => send({ type: 'output', chunk, instruction_id: seq }));
      send({ type: 'result', instruction_id: seq, result });
    } catch (error) {
      const failure = toForeverVMError(error);
      send({ type: 'error', code: failure.code, id: failure.id });
    }
  }
}
