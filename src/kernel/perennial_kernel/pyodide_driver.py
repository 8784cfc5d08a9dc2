"""The sandbox engine's driver: the kernel inside Pyodide, called by the sandbox process.

A fresh machine starts it with ``start_emscripten``. A machine restored from an image an earlier
build made carries that build's kernel in its memory; ``adopt_emscripten`` has this kernel take
over its state in the same interpreter. Either way the driver is the package's ``_DRIVER``, where
the sandbox process, and a later kernel that takes over from this one, look for it.
"""

import errno
import json
import os
import re
import sys
import time
import types

from . import ipython_shell
from .commands import command_handlers
from .interrupts import install_interrupt_handler
from .kernel import Kernel
from .output import DEFAULT_OUTPUT_LIMIT, short_error
from .pickling import descriptor_bound

# The sandbox process's device for what is not output: a cell's questions, whose answers are read
# back from it, and what a cell displays (its kernel-device.ts).
HOST_DEVICE = "/dev/perennial-host"
# A snapshot collects all of Python's garbage at every this many (see prepare_snapshot).
FULL_COLLECTION_EVERY = 10


class EmscriptenDriver:
    """Drives the kernel inside Pyodide for the sandbox engine. Output leaves through fds 1 and 2,
    whose handlers the sandbox process sets, so Python holds no JS object and the machine's memory
    can always be snapshotted."""

    def __init__(self, kernel, adopt=None):
        """``adopt``: the driver of an earlier kernel that ``kernel`` took over."""
        self.kernel = kernel
        self.handlers = command_handlers(self.kernel)
        self.handlers["configure"] = self._configure
        self.installable = getattr(adopt, "installable", frozenset())
        self.installable_id = getattr(adopt, "installable_id", None)
        self.snapshot_lost = list(getattr(adopt, "snapshot_lost", []))
        # Each write leaves at once; the sandbox process gathers them before they cross to the host.
        self.kernel.sink.coalesce = False
        install_interrupt_handler(self.kernel)
        time.sleep = _sliced_sleep(_unsliced(time.sleep), self.kernel)

    @staticmethod
    def _send(stream, text):
        data = text.encode("utf-8", "surrogatepass")
        fd = 2 if stream == "stderr" else 1
        while data:
            data = data[os.write(fd, data) :]

    def _configure(self, message):
        """The output limit, and the import names the host may install, which are sent only when
        the machine lacks the set named by ``importNamesId``."""
        self.kernel.sink.limit = int(message["outputLimit"])
        if "importNames" in message:
            self.installable = frozenset(message["importNames"])
            self.installable_id = message["importNamesId"]
        return {"importNamesKnown": self.installable_id == message["importNamesId"]}

    def call(self, op, args_json):
        """One command from the sandbox process, as JSON in and JSON out. ``run`` answers a coroutine
        that the process awaits, so that awaits in the cell can complete."""
        args = json.loads(args_json)
        if op == "run":
            return self._run(args)
        try:
            return json.dumps({"ok": True, "result": self.handlers[op](args)})
        except BaseException as exc:  # report everything to the host
            return json.dumps({"ok": False, "error": short_error(exc)})

    def _missing_imports(self, code):
        """Modules the cell imports, or IPython for a cell in IPython's syntax, that are not
        installed but that the package index has."""
        if not self.installable:
            return []
        if "IPython" in self.installable and not ipython_shell.available() and ipython_shell.wanted(code):
            return ["IPython"]
        try:
            from pyodide.code import find_imports

            names = find_imports(code)
        except Exception:
            return []  # the kernel reports the syntax error
        import importlib.util

        return [
            n for n in names if n in self.installable and n not in sys.modules and importlib.util.find_spec(n) is None
        ]

    async def _run(self, args):
        wanted, code = pip_installs(args["code"])
        if wanted is not None:
            missing = _pip_needs(wanted, bool(args.get("installed")))
            if missing:
                return json.dumps({"ok": True, "result": {"needPackages": missing, "pip": True}})
        missing = self._missing_imports(code)
        if missing:
            # Nothing ran: the host installs them and sends the cell again.
            return json.dumps({"ok": True, "result": {"needPackages": missing}})
        try:
            result = await self.kernel.run_async(code, args.get("cell", 0))
            return json.dumps({"ok": True, "result": result})
        except BaseException as exc:  # report everything to the host
            return json.dumps({"ok": False, "error": short_error(exc)})

    def prepare_snapshot(self, collect=True):
        """Names what a memory snapshot cannot carry: open files and sockets (their descriptors
        live in JavaScript) and pending asyncio tasks (their timers do). The list is kept in
        memory, so the restored machine reports and drops them."""
        import asyncio
        import gc

        # A snapshot cannot carry JS objects that Python holds. Garbage may still hold some:
        # cycles (exceptions and their frames) until a collection, and proxies Pyodide frees
        # lazily, at the next call into JavaScript — so make one. A full collection costs a
        # large machine tens of ms of its pause: the young objects are collected at each
        # snapshot, all of them at every tenth, and when asked (a snapshot found garbage holding
        # a JS object), so that old garbage does not pile up in the snapshots.
        since = getattr(self, "snapshots_since_collection", FULL_COLLECTION_EVERY)
        if collect or since >= FULL_COLLECTION_EVERY:
            gc.collect()
            self.snapshots_since_collection = 1
        else:
            gc.collect(0)
            self.snapshots_since_collection = since + 1
        js = sys.modules.get("js")
        if js is not None:
            js.Object.keys(js.Object.new())
        lost = []
        for name, value in list(self.kernel.ns.items()):
            reason = None if name.startswith("__") else descriptor_bound(value)
            if reason:
                lost.append({"name": name, "reason": reason})
        for task in asyncio.all_tasks(asyncio.get_event_loop()):
            lost.append({"name": f"asyncio task {task.get_name()}", "reason": "a pending task stops at a swap"})
        self.snapshot_lost = lost
        return json.dumps(lost)

    def after_snapshot(self):
        self.snapshot_lost = []

    def after_restore(self):
        os.system = _no_processes
        # Pyodide puts "" in front of sys.path at every load, a snapshot's too: one more per swap.
        if sys.path[:1] == [""]:
            del sys.path[0]
        # And it imports _pyodide_core into __main__, which is the user's namespace here.
        if self.kernel.ns.get("_pyodide_core") is sys.modules.get("_pyodide_core"):
            self.kernel.ns.pop("_pyodide_core", None)
        for item in self.snapshot_lost:
            self.kernel.ns.pop(item["name"], None)
        import asyncio

        for task in asyncio.all_tasks(asyncio.get_event_loop()):
            task.cancel()
        self.kernel.lost.extend(self.snapshot_lost)
        self.snapshot_lost = []


def _ask(prompt, password):
    """Puts a question to the person through the sandbox process, and waits for the answer."""
    with _HostDevice() as device:
        device.send({"type": "input", "prompt": prompt, "password": password})
        reply = json.loads(device.read_all())
    if "error" in reply:
        raise EOFError(f"input() has no answer: {reply['error']}")
    return reply["value"]


def _started():
    """Tells the sandbox process the cell began: an interrupt that came before is held for it."""
    try:
        with _HostDevice() as device:
            device.send({"type": "started"})
    except (EOFError, OSError):
        pass  # without its device, the process drops such an interrupt when the command ends


def _show(entry):
    """Sends what the cell displayed to the host as it is displayed; the result carries it anyway."""
    try:
        with _HostDevice() as device:
            device.send({"type": "display", "entry": entry})
    except (EOFError, OSError):
        pass


class _HostDevice:
    """The sandbox process's device, open for one exchange: no descriptor outlives it, so a
    snapshot never holds one."""

    def __enter__(self):
        try:
            self.fd = os.open(HOST_DEVICE, os.O_RDWR)
        except OSError:
            raise EOFError("this sandbox process has no line to the host") from None
        return self

    def __exit__(self, *exc):
        os.close(self.fd)

    def send(self, message):
        data = (json.dumps(message) + "\n").encode("utf-8", "surrogatepass")
        while data:
            data = data[os.write(self.fd, data) :]

    def read_all(self):
        chunks = []
        while chunk := os.read(self.fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)


def _sliced_sleep(original, kernel):
    """``time.sleep`` in 20 ms slices: Pyodide's sleep cannot be interrupted, and pending
    output should reach the host while the cell waits."""

    def sleep(seconds):
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            original(min(left, 0.02))
            kernel.sink.flush()

    sleep.__doc__ = original.__doc__
    sleep.__wrapped__ = original
    return sleep


def _unsliced(sleep):
    """The interpreter's own ``time.sleep`` under an earlier kernel's sliced one, if it is that."""
    if isinstance(sleep, types.BuiltinFunctionType):
        return sleep
    original = getattr(sleep, "__wrapped__", None)
    if original is None:
        cells = [cell.cell_contents for cell in getattr(sleep, "__closure__", None) or ()]
        original = next((c for c in cells if isinstance(c, types.BuiltinFunctionType) and c.__name__ == "sleep"), sleep)
    return original


_PIP_INSTALL = re.compile(r"^\s*[%!](?:pip|micropip)\s+install\s+(.*)$")


def pip_installs(code):
    """The packages a cell's ``%pip install`` lines ask for (``%micropip install`` and ``!pip
    install`` too), without versions (the sandbox has its package index's), and the cell with each
    such line made ``pass``: the sandbox installs them before the cell runs, and the rest of the
    cell runs as it is. ``None`` and the cell itself when it has no such line."""
    names, lines, found = [], [], False
    for line in code.splitlines():
        match = _PIP_INSTALL.match(line)
        if match is None:
            lines.append(line)
            continue
        found = True
        names += [
            re.split(r"[\[<>=!~;\s]", word, maxsplit=1)[0]
            for word in match.group(1).split()
            if not word.startswith("-")
        ]
        lines.append(line[: len(line) - len(line.lstrip())] + "pass")
    return (names, "\n".join(lines)) if found else (None, code)


def _pip_needs(wanted, installed):
    """What of ``wanted`` the host must install first (it then sends the cell again, with
    ``installed``, having said what it installed); what is there already is said, as pip says it."""
    from importlib import metadata

    missing, present = [], []
    for name in wanted:
        try:
            present.append(f"{name} ({metadata.version(name)})")
        except metadata.PackageNotFoundError:
            missing.append(name)
    if missing and not installed:
        return missing
    if present and not installed:
        print("\n".join(f"Requirement already satisfied: {p}" for p in present))
    return []


def _publish(driver):
    sys.modules[__package__]._DRIVER = driver
    return driver


def _no_processes(command):
    """``os.system`` in the sandbox, which runs no processes: Emscripten's answers 127 << 8
    without a word. Raised as ``subprocess`` raises it."""
    raise OSError(
        errno.ENOSYS,
        f"The sandbox runs no processes, so os.system({command!r}) cannot run; a python-engine machine can",
    )


def start_emscripten(output_limit=DEFAULT_OUTPUT_LIMIT):
    """Called once by the sandbox process when it boots a fresh machine."""
    # Emscripten names the program Node ran in ``_``: a path of the host, not the machine's.
    os.environ.pop("_", None)
    os.system = _no_processes
    driver = _publish(
        EmscriptenDriver(
            Kernel(EmscriptenDriver._send, output_limit, fds=(1, 2), ask=_ask, show=_show, on_start=_started)
        )
    )
    # What a fresh machine holds is never garbage: frozen out of the collector's reach, so that
    # the collection before every snapshot neither walks it nor rewrites its objects' headers
    # (Python 3.14's collector flips a bit in each at every full pass), which every snapshot
    # would carry as differences from the base.
    import gc

    gc.collect()
    gc.freeze()
    return driver


def adopt_emscripten(earlier):
    """Called by the sandbox process when it restores a machine whose kernel (the module or
    package ``earlier``) an earlier build made: this kernel takes over that one's state in the
    same interpreter, so the machine answers today's commands with everything it held."""
    driver = earlier._DRIVER
    kernel = Kernel(
        EmscriptenDriver._send,
        driver.kernel.sink.limit,
        fds=(1, 2),
        adopt=driver.kernel,
        ask=_ask,
        show=_show,
        on_start=_started,
    )
    # Builds before 0.2.0 bound the kernel module in the user's namespace.
    if kernel.ns.get("perennial_kernel") is earlier:
        del kernel.ns["perennial_kernel"]
    return _publish(EmscriptenDriver(kernel, adopt=driver))
