"""The python engine's driver: the kernel as a child process of the user's own CPython.

Commands arrive as JSON lines on fd 3 and events leave as JSON lines on fd 4, so the user's
stdout is never the channel; the real stdout and stderr (subprocesses, C code) are the cell's
output too, captured by the host. An interrupt is a command too: no signal crosses between
processes, which Windows cannot do.
"""

import collections
import itertools
import json
import os
import signal
import sys
import threading
import time

from .commands import command_handlers
from .interrupts import install_interrupt_handler
from .kernel import Kernel
from .output import DEFAULT_OUTPUT_LIMIT, short_error


class Channel:
    """JSON lines on fd 4. An interrupt that arrives while the main thread writes a message is
    held until the message is whole, so the host never sees half a line."""

    def __init__(self, fd, interruptible):
        self._fd = fd
        self._lock = threading.Lock()
        self._interruptible = interruptible
        self.critical = False
        self.interrupt_pending = False

    def send(self, message):
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8", "surrogatepass")
        main_thread = threading.current_thread() is threading.main_thread()
        with self._lock:
            if main_thread:
                self.critical = True
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
            finally:
                if main_thread:
                    self.critical = False
        if main_thread and self.interrupt_pending:
            self.interrupt_pending = False
            if self._interruptible():
                raise KeyboardInterrupt


class Inbox:
    """The command pipe, read by a thread of its own: an interrupt acts at once, whatever the main
    thread is doing; every other command waits for the main thread, in order."""

    def __init__(self, stream, on_interrupt):
        self._messages = collections.deque()
        self._arrived = threading.Condition()
        self._closed = False
        threading.Thread(target=self._read, args=(stream, on_interrupt), name="perennial-inbox", daemon=True).start()

    def _read(self, stream, on_interrupt):
        for line in stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("op") == "interrupt":
                on_interrupt()
                continue
            with self._arrived:
                self._messages.append(message)
                self._arrived.notify_all()
        with self._arrived:
            self._closed = True
            self._arrived.notify_all()

    def take(self, wanted=lambda message: True):
        """The first message ``wanted`` accepts, the others left in order; None once the pipe is
        closed. It waits in short steps, so that an interrupt is raised here on every system."""
        with self._arrived:
            while True:
                for index, message in enumerate(self._messages):
                    if wanted(message):
                        del self._messages[index]
                        return message
                if self._closed:
                    return None
                self._arrived.wait(0.1)


def _interrupt_main_thread():
    """A SIGINT for the main thread, from within this process. POSIX: sent to that thread, which
    ends a blocking call there (a sleep, a read). Windows: raised here, where the C handler also
    wakes the calls that wait for Ctrl-C (``time.sleep``)."""
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    else:
        signal.raise_signal(signal.SIGINT)


def _set_memory_limit(megabytes):
    if not megabytes:
        return
    try:
        import resource
    except ImportError:
        return
    limit = int(megabytes) * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def _die_with_parent():
    """On Linux, end this process when the engine's process dies, even by kill -9."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        return
    expected = os.environ.pop("PERENNIAL_PARENT_PID", None)
    if expected and os.getppid() != int(expected):  # the parent died before the request took effect
        os._exit(1)


def main():
    """Runs the kernel as the python engine's child process."""
    _die_with_parent()
    # The channel fds must not leak into processes the user's code starts.
    for fd in (3, 4):
        os.set_inheritable(fd, False)
    current = {"id": None, "kernel": None}
    channel = Channel(4, lambda: current["kernel"] is not None and current["kernel"].running)

    def send_output(stream, text):
        channel.send({"ev": "out", "id": current["id"], "stream": stream, "text": text})

    inbox = Inbox(os.fdopen(3, "rb"), _interrupt_main_thread)
    questions = itertools.count(1)

    def ask(prompt, password):
        # The host answers on the command channel. An answer to an earlier question (one an
        # interrupt cut short) is passed over by the main loop.
        number = next(questions)
        channel.send({"ev": "input", "id": current["id"], "n": number, "prompt": prompt, "password": password})
        message = inbox.take(lambda m: m.get("op") == "input_reply" and m.get("n") == number)
        if message is None:
            raise EOFError("input() has no answer: Perennial closed the machine's channel")
        if "error" in message:
            raise EOFError(f"input() has no answer: {message['error']}")
        return str(message["value"])

    kernel = current["kernel"] = Kernel(
        send_output,
        DEFAULT_OUTPUT_LIMIT,
        fds=(1, 2),
        ask=ask,
        on_start=lambda: channel.send({"ev": "started", "id": current["id"]}),
        show=lambda entry: channel.send({"ev": "display", "id": current["id"], "entry": entry}),
    )

    install_interrupt_handler(kernel, channel)

    def flusher():
        # Partial lines reach the host soon even while the cell blocks.
        while True:
            kernel.sink.wake.wait()
            kernel.sink.wake.clear()
            time.sleep(0.02)
            kernel.sink.flush()

    threading.Thread(target=flusher, name="perennial-flusher", daemon=True).start()
    handlers = command_handlers(kernel)
    workdir = None

    def assign(message):
        """The first command: the process is given its machine (it may have been started ahead,
        in a pool), its folder, its limits, and the environment to enter when it was started by
        the base interpreter of the machine's own."""
        nonlocal workdir
        workdir = message["workdir"]
        kernel.sink.limit = int(message["output_limit"])
        _set_memory_limit(message["memory_mb"])
        from .environment import enter, scripts_first

        if message.get("environment"):
            enter(**message["environment"])
        scripts_first()
        return None

    handlers = {**handlers, "assign": assign}
    channel.send({"ev": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    while True:
        message = inbox.take()
        if message is None:
            break
        try:
            if message.get("op") == "input_reply":  # for a question an interrupt cut short
                continue
            current["id"] = message.get("id")
            if workdir and message["op"] != "assign":
                # Entered at the first command, not at start: the host may have put another
                # folder in its place meanwhile (a rollback). No command runs anywhere else.
                os.chdir(workdir)
                kernel.workdir = os.getcwd()
                workdir = None
            handler = handlers[message["op"]]
            reply = {"ev": "reply", "id": current["id"], "ok": True, "result": handler(message)}
        except BaseException as exc:  # the driver must outlive anything a command does
            reply = {"ev": "reply", "id": current.get("id"), "ok": False, "error": short_error(exc)}
        try:
            channel.send(reply)
        except (TypeError, ValueError) as exc:
            channel.send({"ev": "reply", "id": current["id"], "ok": False, "error": short_error(exc)})
        current["id"] = None
        channel.interrupt_pending = False
