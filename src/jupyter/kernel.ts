import { VERSION } from '../shared/version.ts';
import type { PerennialClient } from '../shared/perennial-client.ts';
import type { z } from 'zod';
import type { FrontEndComm } from '../shared/requests.ts';
import type { CommDelivery, InputRequest } from '../shared/types.ts';
import { CellMessages } from './cell-messages.ts';
import type { ConnectionInfo } from './connection-file.ts';
import { executeCell } from './execution.ts';
import { historyReply } from './history.ts';
import { completeReply, inspectReply } from './introspection.ts';
import { nextLineIndent } from '../shared/python-indent.ts';
import { MessageCodec, PROTOCOL_VERSION, type Content, type JupyterMessage } from './messages.ts';
import type { NotebookMachine } from '../notebooks/notebook-machine.ts';
import type { Restarts } from './restarts.ts';
import { CommInfoRequest, CompleteRequest, contentOf, ExecuteRequest, HistoryRequest, InspectRequest, IsCompleteRequest, ShutdownRequest } from './requests.ts';
import { ZmtpSocket, type ZmtpPeer } from './zmtp.ts';

export interface KernelOptions {
  connection: ConnectionInfo;
  /** The server's client: connected once the channels are bound, which answer Jupyter's heartbeat at once (a server that starts takes seconds); connected again after a failure. */
  client: () => Promise<PerennialClient>;
  /** Finds (or makes) the notebook's machine: once, and again after it failed or the machine was deleted. */
  findMachine: () => Promise<NotebookMachine>;
  restarts: Restarts;
  log: (line: string) => void;
}

interface Channels {
  shell: ZmtpSocket;
  control: ZmtpSocket;
  stdin: ZmtpSocket;
  iopub: ZmtpSocket;
  hb: ZmtpSocket;
}

type Handler = (message: JupyterMessage, channel: ZmtpSocket) => Promise<void> | void;

/**
 * A Jupyter kernel whose cells run on a Perennial machine: the five channels of the connection
 * file, bound here, and each request of Jupyter's messaging protocol answered from the machine.
 * Shell requests are answered one at a time, in order; control requests at once.
 */
export class JupyterKernel {
  readonly #codec: MessageCodec;
  #channels!: Channels;
  #shellQueue: Promise<void> = Promise.resolve();
  /** Shell requests taken so far, and the first of them that an error does not abort. */
  #arrived = 0;
  #abortBelow = 0;
  /** The number of the last stored execution: its instruction's on the machine, plus one. */
  readonly #count = { value: 0 };
  #noted = false;
  #machine: Promise<NotebookMachine> | undefined;
  #warming: Promise<void> | undefined;
  /** A cell of this kernel runs on the machine. */
  #running = false;
  #input: { resolve: (value: string) => void; reject: (error: Error) => void } | null = null;
  #stopped!: () => void;
  /** Resolves once a front end asked the kernel to shut down (or restart). */
  readonly stopped = new Promise<void>((resolve) => (this.#stopped = resolve));

  private constructor(private readonly options: KernelOptions) {
    this.#codec = new MessageCodec(options.connection.key, options.connection.signature_scheme);
  }

  /** A kernel listening on the connection file's ports. */
  static async start(options: KernelOptions): Promise<JupyterKernel> {
    const kernel = new JupyterKernel(options);
    const { ip, shell_port, control_port, stdin_port, iopub_port, hb_port } = options.connection;
    const take = (name: string) => (peer: ZmtpPeer, frames: Buffer[]) => kernel.#take(name, peer, frames);
    const sockets = await Promise.allSettled([
      ZmtpSocket.bind('ROUTER', ip, shell_port, take('shell')),
      ZmtpSocket.bind('ROUTER', ip, control_port, take('control')),
      ZmtpSocket.bind('ROUTER', ip, stdin_port, take('stdin')),
      ZmtpSocket.bind('PUB', ip, iopub_port),
      ZmtpSocket.bind('REP', ip, hb_port, (peer, frames) => peer.send(frames)),
    ]);
    const failed = sockets.find((s) => s.status === 'rejected');
    if (failed) {
      await Promise.all(sockets.map((s) => (s.status === 'fulfilled' ? s.value.close() : undefined)));
      throw failed.reason;
    }
    const [shell, control, stdin, iopub, hb] = sockets.map((s) => (s as PromiseFulfilledResult<ZmtpSocket>).value) as [
      ZmtpSocket,
      ZmtpSocket,
      ZmtpSocket,
      ZmtpSocket,
      ZmtpSocket,
    ];
    kernel.#channels = { shell, control, stdin, iopub, hb };
    // Looked for while the front end connects; a failure is told by the first cell.
    kernel.#found().catch(() => {});
    return kernel;
  }

  /** The notebook's machine: found once; looked for again after a failure (a server that could not be reached). */
  #found(): Promise<NotebookMachine> {
    this.#machine ??= this.options.findMachine().then(
      (machine) => {
        // A machine found (again) has its say in the next cell shown.
        this.#noted = false;
        // As ipykernel's: IPython's shell runs (its names, its tracebacks); queued before the first cell.
        void this.options
          .client()
          .then((client) => client.startIPython(machine.info.name))
          .catch((error: Error) => this.options.log(`IPython not started: ${error.message}`));
        return machine;
      },
      (error: unknown) => {
        this.#machine = undefined;
        throw error;
      },
    );
    return this.#machine;
  }

  /** Stops the running cell; the machine keeps its state (an interrupt by signal comes here). */
  async interrupt(): Promise<void> {
    const { info } = await this.#found();
    await (await this.options.client()).interrupt(info.name);
  }

  async close(): Promise<void> {
    this.#input?.reject(new Error('the kernel stopped'));
    await Promise.all(Object.values(this.#channels).map((channel) => channel.close()));
  }

  #take(name: string, peer: ZmtpPeer, frames: Buffer[]): void {
    let message: JupyterMessage;
    try {
      message = this.#codec.decode([peer.identity, ...frames]);
    } catch (error) {
      // Whatever a peer sends, the kernel goes on.
      this.options.log(`Dropped a message on ${name}: ${(error as Error).message}`);
      return;
    }
    if (name === 'stdin') return this.#answer(message);
    const channel = name === 'shell' ? this.#channels.shell : this.#channels.control;
    if (name === 'control') {
      void this.#handle(message, channel);
      return;
    }
    const index = this.#arrived++;
    this.#shellQueue = this.#shellQueue.then(() => {
      if (index < this.#abortBelow && message.header.msg_type === 'execute_request') return this.#abort(message, channel);
      return this.#handle(message, channel);
    });
  }

  async #handle(message: JupyterMessage, channel: ZmtpSocket): Promise<void> {
    const handler = this.#handlers[message.header.msg_type];
    if (!handler) {
      this.options.log(`No answer to ${message.header.msg_type}: this kernel does not know it`);
      return;
    }
    this.#publish('status', { execution_state: 'busy' }, message);
    try {
      await handler(message, channel);
    } catch (error) {
      this.options.log(`${message.header.msg_type} failed: ${(error as Error).stack ?? String(error)}`);
      if (message.header.msg_type.endsWith('_request')) this.#reply(channel, message, errorContent(error as Error));
    } finally {
      this.#publish('status', { execution_state: 'idle' }, message);
    }
  }

  readonly #handlers: Record<string, Handler> = {
    kernel_info_request: async (message, channel) => this.#reply(channel, message, await this.#kernelInfo()),
    execute_request: (message, channel) => this.#execute(message, channel),
    complete_request: async (message, channel) => {
      const { code, cursor_pos } = contentOf(CompleteRequest, message);
      const { info } = await this.#found();
      this.#reply(channel, message, await completeReply(await this.options.client(), info.name, code, cursor_pos ?? [...code].length));
    },
    inspect_request: async (message, channel) => {
      const { code, cursor_pos, detail_level } = contentOf(InspectRequest, message);
      const { info } = await this.#found();
      this.#reply(channel, message, await inspectReply(await this.options.client(), info.name, code, cursor_pos ?? [...code].length, detail_level));
    },
    is_complete_request: async (message, channel) => {
      const { code } = contentOf(IsCompleteRequest, message);
      const { info } = await this.#found();
      const status = await (await this.options.client()).isComplete(info.name, code);
      this.#reply(channel, message, status === 'incomplete' ? { status, indent: nextLineIndent(code) } : { status });
    },
    history_request: async (message, channel) => {
      const request = contentOf(HistoryRequest, message);
      const { info } = await this.#found();
      this.#reply(channel, message, await historyReply(await this.options.client(), info.name, request));
    },
    comm_info_request: async (message, channel) => {
      const { target_name } = contentOf(CommInfoRequest, message);
      const { comms } = await this.#deliver(message, { msg_type: 'comm_info', content: target_name === undefined ? {} : { target_name } });
      this.#reply(channel, message, { status: 'ok', comms });
    },
    comm_open: (message) => this.#comm(message),
    comm_msg: (message) => this.#comm(message),
    comm_close: (message) => this.#comm(message),
    connect_request: (message, channel) => {
      const { shell_port, iopub_port, stdin_port, control_port, hb_port } = this.options.connection;
      this.#reply(channel, message, { status: 'ok', shell_port, iopub_port, stdin_port, control_port, hb_port });
    },
    interrupt_request: async (message, channel) => {
      this.#input?.reject(new Error('interrupted'));
      await this.interrupt();
      this.#reply(channel, message, { status: 'ok' });
    },
    shutdown_request: async (message, channel) => {
      const { restart } = contentOf(ShutdownRequest, message);
      await this.#shutdown(restart);
      this.#reply(channel, message, { status: 'ok', restart });
      this.#publish('shutdown_reply', { status: 'ok', restart }, message);
      this.#stopped();
    },
  };

  /** A front end's comm message, to the comm's code on the machine; what that printed and displayed goes to iopub in answer to it. */
  async #comm(message: JupyterMessage): Promise<void> {
    const msgType = message.header.msg_type as 'comm_open' | 'comm_msg' | 'comm_close';
    await this.#deliver(message, {
      msg_type: msgType,
      content: message.content,
      metadata: message.metadata,
      buffers: message.buffers.map((buffer) => buffer.toString('base64')),
    });
  }

  async #deliver(message: JupyterMessage, comm: z.input<typeof FrontEndComm>): Promise<CommDelivery> {
    const { info } = await this.#found();
    const delivery = await (await this.options.client()).comm(info.name, comm);
    const cell = new CellMessages((type, body, extra) => this.#publish(type, body, message, extra));
    for (const event of delivery.events) {
      if ('stream' in event) cell.text(event.stream, event.text);
      else cell.display(event.display);
    }
    cell.flush();
    return delivery;
  }

  async #kernelInfo(): Promise<Content> {
    const machine = await this.#found().catch(() => null);
    const python = machine ? this.#pythonVersion(machine, await this.options.client()) : '3';
    const where = machine ? `machine ${machine.info.name} (${machine.info.engine} engine)` : 'a Perennial machine';
    return {
      status: 'ok',
      protocol_version: PROTOCOL_VERSION,
      implementation: 'perennial',
      implementation_version: VERSION,
      language_info: {
        name: 'python',
        version: python,
        mimetype: 'text/x-python',
        file_extension: '.py',
        pygments_lexer: 'ipython3',
        codemirror_mode: { name: 'ipython', version: 3 },
        nbconvert_exporter: 'python',
      },
      banner: `Perennial ${VERSION}: Python ${python} on ${where}, a REPL that never dies`,
      help_links: [{ text: 'Perennial in Jupyter', url: 'https://github.com/perennial-dev/perennial/blob/main/docs/jupyter.md' }],
    };
  }

  /**
   * The machine's Python. A machine that never ran knows it once it starts: it is started now (as
   * its first cell would start it) for the next ask, and this one is answered at once, since front
   * ends ask again when an answer is slow.
   */
  #pythonVersion(machine: NotebookMachine, client: PerennialClient): string {
    const name = machine.info.name;
    if (!machine.info.runtime && !this.#warming) {
      this.#warming = client
        .isComplete(name, 'pass')
        .then(() => client.get(name))
        .then((info) => void (machine.info.runtime = info.runtime))
        .catch(() => {});
    }
    return machine.info.runtime?.python ?? '3';
  }

  async #execute(message: JupyterMessage, channel: ZmtpSocket): Promise<void> {
    const request = contentOf(ExecuteRequest, message);
    const { reply, failed, machineGone } = await executeCell(request, (type, body, extra) => this.#publish(type, body, message, extra), {
      client: this.options.client,
      machine: () => this.#found(),
      takeNotes: (machine) => this.#firstNotes(machine),
      count: this.#count,
      ask: (question, signal) => this.#ask(message, question, signal),
      running: (on) => (this.#running = on),
    });
    // One deleted meanwhile is the notebook's no more: the next cell finds (or makes) the notebook's machine again.
    if (machineGone) this.#machine = undefined;
    if (failed && request.stop_on_error) this.#abortBelow = this.#arrived;
    this.#reply(channel, message, reply);
  }

  /** What the kernel's first cell says before its output: which machine, whether it came back, a restart's checkpoint. */
  #firstNotes(machine: NotebookMachine): string[] {
    if (this.#noted) return [];
    this.#noted = true;
    return machine.notes;
  }

  #abort(message: JupyterMessage, channel: ZmtpSocket): void {
    this.#publish('status', { execution_state: 'busy' }, message);
    // As ipykernel answers: no number, so that front ends show the cell as never run (In [ ]).
    this.#reply(channel, message, { status: 'aborted' });
    this.#publish('status', { execution_state: 'idle' }, message);
  }

  /** A cell's `input()`: asked on the stdin channel of the front end that sent the cell. */
  #ask(message: JupyterMessage, request: InputRequest, signal: AbortSignal): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      this.#input?.reject(new Error('another question was asked'));
      const abandon = () => reject(new Error('the cell ended'));
      signal.addEventListener('abort', abandon, { once: true });
      this.#input = {
        resolve: (value) => {
          signal.removeEventListener('abort', abandon);
          resolve(value);
        },
        reject: (error) => {
          signal.removeEventListener('abort', abandon);
          reject(error);
        },
      };
      this.#send(this.#channels.stdin, 'input_request', { prompt: request.prompt, password: request.password }, message);
    });
  }

  #answer(message: JupyterMessage): void {
    if (message.header.msg_type !== 'input_reply') return;
    const input = this.#input;
    this.#input = null;
    input?.resolve(String(message.content.value ?? ''));
  }

  async #shutdown(restart: boolean): Promise<void> {
    const machine = await this.#found().catch(() => null);
    if (!machine) return;
    const name = machine.info.name;
    const client = await this.options.client();
    // A restart or a shutdown stops what this kernel runs, as in any kernel; the machine keeps its state.
    if (this.#running) await client.interrupt(name).catch(() => {});
    if (restart) return this.options.restarts.asked(name);
    // A kernel's own machine (no notebook) is wanted no more once its kernel is shut down.
    if (machine.throwaway) {
      await client.delete(name).catch((error: Error) => this.options.log(`Machine ${name} stays: ${error.message}`));
      return;
    }
    // Nothing runs for this kernel any more: the machine goes to disk (never away), and comes back with the next kernel.
    await Promise.race([client.swap(name).catch(() => {}), new Promise((resolve) => setTimeout(resolve, 3000).unref())]);
  }

  #reply(channel: ZmtpSocket, parent: JupyterMessage, content: Content): void {
    this.#send(channel, `${parent.header.msg_type.replace(/_request$/, '')}_reply`, content, parent);
  }

  #send(channel: ZmtpSocket, msgType: string, content: Content, parent: JupyterMessage): void {
    const [identity, ...ids] = parent.ids;
    if (identity) channel.route(identity, this.#codec.encode(msgType, content, parent, ids));
  }

  #publish(msgType: string, content: Content, parent: JupyterMessage | undefined, extra: { metadata?: Content; buffers?: Buffer[] } = {}): void {
    const topic = Buffer.from(`kernel.${this.#codec.session}.${msgType}`);
    this.#channels.iopub.publish(this.#codec.encode(msgType, content, parent, [topic], extra.metadata, extra.buffers));
  }
}

function errorContent(error: Error): { status: 'error'; ename: string; evalue: string; traceback: string[] } {
  return { status: 'error', ename: error.name, evalue: error.message, traceback: [] };
}
