"""``Kernel``: one REPL. A namespace and the result semantics of its cells (the last expression's
repr, streamed output, tracebacks of the user's own code, figures), a reset, and the swap of the
namespace to a snapshot file and back.
"""

import ast
import builtins
import importlib
import linecache
import os
import sys
import time
import traceback
import types

from . import comms, ipython_shell, process_state, snapshot_file
from .display import Displays, has_rich_repr, install_display, mime_bundle
from .figures import capture_figures, close_figures, install_pyplot_hook, repr_png
from .output import DEFAULT_OUTPUT_LIMIT, OutputSink, short_error, stream_writer
from .output_widgets import PARENT, OutputWidgets
from .pickling import save_order
from .questions import install_questions
from .reducers import forget_parsed_cells, restoring

MAX_KEPT_CELLS = 2000
FUTURE_FLAGS = 0
for _feature in __import__("__future__").all_feature_names:
    FUTURE_FLAGS |= getattr(__import__("__future__"), _feature).compiler_flag

# inspect.CO_COROUTINE, as CPython has defined it since 3.5: inspect itself is slow to import.
_CO_COROUTINE = 0x80


# The modules of the kernel's own objects ("perennial_kernel."), which a snapshot leaves out.
_OWN_MODULES = __name__.rpartition(".")[0] + "."
# The kernel's own frames, which a user's traceback leaves out.
_KERNEL_DIR = os.path.dirname(os.path.abspath(__file__))


class Kernel:
    """One REPL: a namespace, result semantics and swap.

    ``on_start``: called as each cell starts, where an interrupt would reach it (the python
    engine holds an interrupt until then: one sent earlier would find nothing to stop).

    ``ask``: the driver's way to put ``input()``'s question to whoever sent the cell, or None
    with ``unable``, why there is none (``questions``). ``show``: the driver's way to send what a
    cell displays as it is displayed (``display.Displays``).

    ``adopt``: the kernel of an earlier build, running in this interpreter, that this one takes
    over (a sandbox machine carries its kernel in its memory): its namespace, cells and losses,
    and the stream objects that code may still hold. A later kernel reads the same attributes of
    this one, so their names stay."""

    def __init__(
        self,
        send_output,
        output_limit=DEFAULT_OUTPUT_LIMIT,
        fds=(None, None),
        adopt=None,
        ask=None,
        unable=None,
        on_start=None,
        show=None,
    ):
        if adopt is None:
            self.module = types.ModuleType("__main__")
            self.module.__dict__["__builtins__"] = builtins
        else:
            self.module = adopt.module
        sys.modules["__main__"] = self.module
        self.ns = self.module.__dict__
        # ipywidgets' Output widgets, which take what runs inside ``with out:`` (``output_widgets``).
        self.output_widgets = OutputWidgets()
        self.sink = OutputSink(send_output, output_limit, self.output_widgets)
        self.stdout = stream_writer(self.sink, "stdout", fds[0], getattr(adopt, "stdout", None))
        self.stderr = stream_writer(self.sink, "stderr", fds[1], getattr(adopt, "stderr", None))
        sys.stdout, sys.stderr = self.stdout, self.stderr
        self.running = False
        self._on_start = on_start
        self.future_flags = getattr(adopt, "future_flags", 0)
        self.cells = dict(getattr(adopt, "cells", {}))
        self.images = []
        # What the running cell asked a Jupyter front end to put in the next cell (``set_next_input``).
        self.next_input = None
        # Where the machine started: a snapshot's paths under it move with the machine (a fork).
        self.workdir = getattr(adopt, "workdir", None) or os.getcwd()
        self.lost = list(getattr(adopt, "lost", []))
        self._loop = getattr(adopt, "_loop", None)
        self.displays = Displays(self.sink, show, self.output_widgets)
        # IPython's shell, once a cell needs it (``ipython_shell``), and the magics that set its
        # state, for a swap to replay (``process_state``).
        self.shell = None
        self.magics = list(getattr(adopt, "magics", []))
        if ipython_shell.available():
            # As in IPython: libraries ask it whether they run in a notebook (pandas' display width).
            builtins.get_ipython = self.ipython
        # The comms of an earlier kernel go on: the front end still shows their widgets.
        self.comm_manager = getattr(adopt, "comm_manager", None) or comms.CommManager(self)
        self.comm_manager.kernel = self
        comms.install(self)
        install_pyplot_hook(self)
        install_display(self)
        install_questions(self, ask, unable)

    def ipython(self):
        """IPython's shell on this namespace, made on first use; None without IPython."""
        if self.shell is None and ipython_shell.available():
            with process_state.warnings_kept():
                self.shell = ipython_shell.make_shell(self)
            # A sandbox machine installs IPython after the kernel started.
            builtins.get_ipython = self.ipython
        return self.shell

    def get_parent(self):
        """The parent message ipywidgets' ``with out:`` takes its ``msg_id`` from (ipywidgets 8), as
        ipykernel's kernel answers it; ``_parent_header`` is the same for ipywidgets 7."""
        return PARENT

    @property
    def _parent_header(self):
        return PARENT

    @staticmethod
    def format_exception(exc):
        return _format_exception(exc)

    def user_namespace(self):
        """The namespace without what IPython put in it (``In``, ``Out``, ``get_ipython``)."""
        hidden = ipython_shell.hidden_names(self.shell, self.ns)
        return {name: value for name, value in self.ns.items() if name not in hidden} if hidden else self.ns

    def deliver_comm(self, message):
        """A front end's comm message, handled by its comm's code outside any cell: what that
        printed and displayed (its own comm messages among them), in order, and the comms open
        then (``comm_info`` asks only for those)."""
        events = []
        send_text = lambda stream, text: events.append({"stream": stream, "text": text})  # noqa: E731
        show = lambda entry: events.append({"display": {k: v for k, v in entry.items() if k != "output_chars"}})  # noqa: E731
        with self.sink.diverted(send_text), self.displays.diverted(show):
            if message["msg_type"] != "comm_info":
                try:
                    self.comm_manager.receive(message)
                except Exception as exc:
                    self.stderr.write(_format_exception(exc) + "\n")
        content = message.get("content") or {}
        return {"events": events, "comms": self.comm_manager.info(content.get("target_name"))}

    # -- running cells ---------------------------------------------------------------------------

    def run(self, code, cell):
        """Runs one cell to the end; returns an ExecResult dict (``value``/``data`` or ``error``).
        Awaits in the cell run on the kernel's own event loop."""
        return _finished(self._drive(code, cell, self._run_until_complete))

    def run_async(self, code, cell):
        """``run`` for a host whose event loop must keep turning (Pyodide): awaits in the cell
        are awaited here instead of blocking."""
        return self._drive(code, cell, _awaited)

    async def _drive(self, code, cell, settle):
        """The one step loop: the cell's steps, each awaitable they yield settled by ``settle``
        and its outcome sent back in."""
        steps = self._run_steps(code, cell)
        sent, thrown = None, None
        while True:
            try:
                awaitable = steps.throw(thrown) if thrown is not None else steps.send(sent)
            except StopIteration as finished:
                return finished.value
            sent, thrown = None, None
            try:
                sent = await settle(awaitable)
            except BaseException as exc:  # handed back to the cell
                thrown = exc

    async def _run_until_complete(self, awaitable):
        import asyncio

        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(awaitable)

    def _run_steps(self, code, cell):
        """The cell, as a generator that yields each awaitable it needs the result of."""
        filename = f"<cell {cell}>"
        self._remember_cell(filename, code)
        self.sink.reset()
        self.displays.reset()
        self.images = []
        self.next_input = None
        result = {}
        styled = None
        started = time.perf_counter()
        self.running = True
        shell = self.shell or (
            self.ipython() if ipython_shell.available() and ipython_shell.needs_ipython(code, self.ns) else None
        )
        if shell is not None:
            shell.events.trigger("pre_execute")
        try:
            if self._on_start is not None:
                self._on_start()
            body, last = self._compile(code, filename)
            yield from self._evaluate(body)
            value = (yield from self._evaluate(last)) if last is not None else None
            result["value"] = None
            if value is not None:
                self.ns["_"] = value
                result["value"] = self._bounded_repr(value)
                png = repr_png(value)
                if png:
                    self.images.append(png)
                self._display_value(value, result["value"], png)
        except BaseException as exc:  # a cell may raise anything, even SystemExit
            self.running = False
            result = {"error": _format_exception(exc)}
            styled = self._jupyter_traceback(exc)
        finally:
            self.running = False
        try:
            capture_figures(self.images)
        except Exception as exc:  # a broken figure must not lose the cell's result
            self.stderr.write(f"perennial: could not render a figure: {short_error(exc)}\n")
        if shell is not None:
            try:
                shell.events.trigger("post_execute")
            except Exception as exc:  # an extension's hook must not lose the cell's result
                self.stderr.write(f"perennial: an IPython post_execute hook failed: {short_error(exc)}\n")
        dropped = self.sink.finish()
        data = {}
        if dropped:
            data["truncated"] = {"limit": self.sink.limit, "dropped": dropped}
        displays = self.displays.take()
        if displays:
            data["display"] = displays
        if self.images:
            data["png"] = self.images[0]
            data["images"] = [{"mimeType": "image/png", "data": d} for d in self.images]
        if self.lost:
            data["lost"] = self.lost
            self.lost = []
        if "error" in result and styled:
            data["traceback"] = styled
        if self.next_input is not None:
            data["next_input"] = self.next_input
        if "error" not in result:
            result["data"] = data or None
        elif data:
            result["data"] = data
        result["runtime_ms"] = int((time.perf_counter() - started) * 1000)
        return result

    def _jupyter_traceback(self, exc):
        """The error as IPython shows it in Jupyter, where IPython's shell runs (a Jupyter kernel
        starts it: ``start_ipython``); a misused magic and a cell that needs IPython keep their one
        line. Never loaded for it: an interrupt's result must be back within the grace period, and
        the shell's names would appear in the namespace of a machine that never asked for them."""
        shell = self.shell
        if shell is None or isinstance(exc, ipython_shell.IPythonMissing) or ipython_shell.usage_error(exc):
            return None
        skipped, tb = 0, exc.__traceback__
        while tb is not None and os.path.dirname(tb.tb_frame.f_code.co_filename) == _KERNEL_DIR:
            skipped, tb = skipped + 1, tb.tb_next
        return ipython_shell.jupyter_traceback(shell, exc, self.cells, skipped)

    def _display_value(self, value, text, png):
        """The value as IPython would show it, where that is more than its repr: HTML for a
        DataFrame, IPython's pretty text (a long list over several lines, an object without
        ``object``). The result's ``value`` stays the repr. A number or a string IPython shows as
        its repr, which spares a machine that only computes those from loading IPython."""
        if self.shell is None and _shown_as_repr(value, text):
            return
        shell = self.ipython()
        if shell is None and not has_rich_repr(value):
            return
        try:
            data, metadata = ipython_shell.value_bundle(shell, value) if shell is not None else mime_bundle(value)
        except Exception:
            return
        if png:  # already among the result's images
            data.pop("image/png", None)
        if set(data) - {"text/plain"} or data.get("text/plain", text) != text:
            self.displays.publish(data, metadata, result=True)

    def _compile(self, code, filename):
        flags = self.future_flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        if self.shell is not None:
            code = ipython_shell.transform(self.shell, code)
        try:
            tree = compile(code, filename, "exec", flags | ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError:
            construct = ipython_shell.ipython_syntax(code) if self.shell is None else None
            if construct:
                raise ipython_shell.IPythonMissing(ipython_shell.missing_message(construct)) from None
            raise
        if self.shell is not None:
            tree = self.shell.transform_ast(tree)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(code, tree.body[-1]):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, filename, "exec", flags, dont_inherit=True)
        self.future_flags |= body.co_flags & FUTURE_FLAGS
        if last is not None:
            last = compile(last, filename, "eval", flags, dont_inherit=True)
        return body, last

    def _evaluate(self, code):
        if code.co_flags & _CO_COROUTINE:
            return (yield eval(code, self.ns))
        return eval(code, self.ns)
        yield  # a generator even when nothing is awaited

    def _remember_cell(self, filename, code):
        lines = code.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        self.cells[filename] = code
        linecache.cache[filename] = (len(code), None, lines, filename)
        while len(self.cells) > MAX_KEPT_CELLS:
            old = next(iter(self.cells))
            del self.cells[old]
            linecache.cache.pop(old, None)

    def _bounded_repr(self, value):
        limit = self.sink.limit
        text = repr(value)
        if len(text) > limit:
            text = text[:limit] + f"... [perennial: repr truncated, {len(text) - limit} more characters]"
        return text

    # -- reset ------------------------------------------------------------------------------------

    def reset(self):
        """A fresh namespace in the same machine: every name the cells made goes (files and
        installed packages stay), and modules imported from the machine's own folder are
        forgotten, so that their next import reads them again. Returns how many names went."""
        names = [n for n in self.user_namespace() if not (n.startswith("__") and n.endswith("__"))]
        self.ns.clear()
        self.ns.update({"__name__": "__main__", "__doc__": None, "__builtins__": builtins})
        if self.shell is not None:  # its own names (In, Out, get_ipython) come back
            self.shell.init_user_ns()
        self.future_flags = 0
        self.images = []
        close_figures()
        own = os.path.realpath(os.getcwd()) + os.sep
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and os.path.realpath(path).startswith(own) and "site-packages" not in path:
                del sys.modules[name]
        importlib.invalidate_caches()
        return {"cleared": len(names)}

    # -- swap ------------------------------------------------------------------------------------

    def snapshot(self, path):
        """Saves the namespace to ``path``; returns what it could not keep. A name that holds one
        of the kernel's own objects (``_`` after ``get_ipython()``) is not the user's to keep, nor
        to be told of: the next kernel makes its own."""
        names = [
            n
            for n, v in self.user_namespace().items()
            if not (n.startswith("__") and n.endswith("__")) and not type(v).__module__.startswith(_OWN_MODULES)
        ]
        modules = {n: self.ns[n].__name__ for n in names if isinstance(self.ns[n], types.ModuleType)}
        values = save_order(self.ns, [n for n in names if n not in modules])
        process, unkept = process_state.capture(self)
        items = [(n, self.ns[n]) for n in values] + [(snapshot_file.PROCESS_SEGMENT, process)]
        meta = {
            "python": sys.version,
            "cache_tag": sys.implementation.cache_tag,
            "modules": modules,
            "cells": self.cells,
            "cwd": os.getcwd(),
            "workdir": self.workdir,
            "sys_path": sys.path,
            "future_flags": self.future_flags,
            # A machine whose IPython shell ran (a Jupyter kernel's) gets it again when restored.
            "ipython": self.shell is not None,
        }
        try:
            size, lost, saved = snapshot_file.write(path, items, meta)
        finally:
            forget_parsed_cells()
        return {"bytes": size, "lost": lost + unkept, "saved": len(modules) + saved}

    def restore(self, path, transfer=False):
        """Loads a snapshot written by ``snapshot``; returns what could not be brought back, which
        the next result also reports, unless this is a ``transfer``: then the file is removed
        once read, and the caller reports the losses."""
        blob, meta = snapshot_file.read(path, transfer)
        lost = list(meta.get("lost", []))
        self.cells.update(meta.get("cells", {}))
        for filename, code in self.cells.items():
            self._remember_cell(filename, code)
        self.future_flags = meta.get("future_flags", 0)
        moved = _rebase(meta.get("workdir"), self.workdir)
        try:
            os.chdir(moved(meta["cwd"]))
        except (OSError, KeyError):
            pass
        for entry in map(moved, meta.get("sys_path", [])):
            if entry not in sys.path:
                sys.path.append(entry)
        for name, module_name in meta.get("modules", {}).items():
            try:
                self.ns[name] = importlib.import_module(module_name)
            except BaseException as exc:
                lost.append({"name": name, "reason": f"import {module_name} failed: {short_error(exc)}"})
        process = {}

        def place(name, value):
            if name == snapshot_file.PROCESS_SEGMENT:
                process.update(value)
            else:
                self.ns[name] = value

        # A function of the namespace (made without adding to it): loads run in a frame of it.
        within = eval("lambda load: load()", self.ns)
        with restoring(meta.get("cache_tag")):
            snapshot_file.load_segments(blob, meta.get("segments", []), lost, place, within)
        if meta.get("ipython"):
            try:
                self.ipython()
            except Exception as exc:  # the namespace came back; only IPython's shell did not
                lost.append({"name": "IPython", "reason": f"its shell did not start again: {short_error(exc)}"})
        process_state.apply(self, process, lost)
        if not transfer:
            self.lost = lost
        return {"lost": lost}


async def _awaited(awaitable):
    return await awaitable


def _finished(coroutine):
    """The value of a coroutine that never waits (one whose awaits all complete at once)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the kernel's step loop waited outside an event loop")


def _format_exception(exc):
    """The traceback as the user should see it: their cells and the libraries they called,
    without the kernel's own frames (the runner above the cell, the interrupt handler) or
    IPython's (a magic's machinery)."""
    if isinstance(exc, ipython_shell.IPythonMissing):
        return str(exc)
    usage = ipython_shell.usage_error(exc)
    if usage:
        return usage
    try:
        report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
        _drop_kernel_frames(report, set())
        return "".join(report.format()).rstrip("\n")
    except Exception:
        return short_error(exc)


def _drop_kernel_frames(report, seen):
    if report is None or id(report) in seen:
        return
    seen.add(id(report))
    kept = [
        frame
        for frame in report.stack
        if os.path.dirname(frame.filename) != _KERNEL_DIR and not ipython_shell.library_frame(frame.filename)
    ]
    report.stack = traceback.StackSummary.from_list(kept)
    _drop_kernel_frames(report.__cause__, seen)
    _drop_kernel_frames(report.__context__, seen)


def _ends_with_semicolon(code, node):
    """True when the text after the last expression is a ``;`` (the REPL's "no value")."""
    lines = code.splitlines()
    if node.end_lineno is None or node.end_lineno > len(lines):
        return False
    rest = lines[node.end_lineno - 1].encode("utf-8")[node.end_col_offset :].decode("utf-8", "ignore")
    rest = "".join([rest, *lines[node.end_lineno :]])
    for char in rest:
        if char.isspace():
            continue
        return char == ";"
    return False


def _shown_as_repr(value, text):
    """Whether IPython would show the value as its repr: a number, a string, or a short list,
    tuple or dict of values with reprs of their own (IPython breaks longer ones over lines)."""
    if isinstance(value, (int, float, complex, str, bytes)):
        return True
    return type(value) in (list, tuple, dict) and len(text) < 80 and " object at 0x" not in text


def _rebase(old, new):
    """Maps a path under the workdir a snapshot was taken in to the same place under this one."""
    if not old or old == new:
        return lambda path: path
    prefix = old.rstrip(os.sep) + os.sep
    return lambda path: new + path[len(old) :] if path == old or path.startswith(prefix) else path
