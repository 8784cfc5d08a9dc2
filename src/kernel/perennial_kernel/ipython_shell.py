"""IPython, where the machine's interpreter has it: its input transformation (``%magic``,
``%%cell magic``, ``!cmd``, ``var = !cmd``, ``obj?``), its magics, ``get_ipython()`` and its display
machinery, working on the kernel's namespace. The kernel still runs each cell itself, so that a
cell's value, output, tracebacks and swaps behave as they do without IPython.

The shell is made the first time a cell needs it (``needs_ipython``): importing IPython costs a
fifth of a second and tens of MB, which a machine that never uses it should not pay.
"""

import ast
import builtins
import importlib
import importlib.util
import os
import shlex
import sys

from . import process_state

_AVAILABLE = None


class IPythonMissing(SyntaxError):
    """A cell with IPython syntax, where the interpreter has no IPython: its message is the
    whole report."""


def available():
    """Whether the interpreter has IPython. Only a yes is kept: a sandbox machine may install it
    later (``wanted``)."""
    global _AVAILABLE
    if not _AVAILABLE:
        try:
            _AVAILABLE = importlib.util.find_spec("IPython") is not None
        except (ImportError, ValueError):
            _AVAILABLE = False
    return _AVAILABLE


def wanted(code):
    """Whether a cell cannot run without IPython, where the interpreter lacks it: it is IPython
    syntax (not Python, with a construct of IPython's) or asks for the shell. A sandbox machine
    then installs IPython from its package index before the cell runs."""
    if "get_ipython" in code:
        return True
    if ipython_syntax(code) is None:
        return False
    try:
        ast.parse(code)
    except SyntaxError:
        return True
    except Exception:
        return False
    return False


def needs_ipython(code, ns):
    """Whether a cell needs IPython: it is not Python (``%time``, ``!ls``), it is one expression
    that starts with a word naming nothing (IPython's automagic: ``pwd``, ``ls -la``), or it asks
    for IPython."""
    if "get_ipython" in code or "IPython" in code or "IPython" in sys.modules:
        return True
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return True
    except Exception:
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr) or len(code.strip().splitlines()) != 1:
        return False
    word = code.split(None, 1)[0]
    return word.isidentifier() and word not in ns and not hasattr(builtins, word)


def ipython_syntax(code):
    """The first IPython construct in a cell (``%timeit``, ``!ls``, ``obj?``), or None."""
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith(("%", "!")):
            return stripped.split(None, 1)[0]
        if stripped.endswith("?") and not stripped.startswith("#"):
            return stripped.split()[-1]
        rest = stripped.split("=", 1)[1].strip() if "=" in stripped else ""
        if rest.startswith(("!", "%")):
            return rest.split(None, 1)[0]
    return None


def missing_message(construct):
    """What a cell with IPython syntax says where the interpreter has no IPython."""
    return (
        f"IPythonMissing: this cell uses IPython syntax ({construct}), and this machine's Python has no IPython: install the package "
        "ipython into this machine (perennial install NAME ipython, the install-python-packages tool, or VS Code's Install Packages), "
        "then run the cell again."
    )


def make_shell(kernel):
    """The IPython shell on the kernel's namespace, whose display goes to the kernel's cell. One
    per process, as IPython allows: a later kernel (one that takes over from an earlier one) gets
    the same shell, pointed at its namespace."""
    from traitlets.config import Config

    shell_class = _shell_class()
    if shell_class.initialized():
        shell = shell_class.instance()
        shell.init_create_namespaces(kernel.module, kernel.ns)
        shell.init_user_ns()
    else:
        config = Config()
        # No history database: the machine's history is Perennial's.
        config.HistoryManager.enabled = False
        config.InteractiveShell.colors = "NoColor"
        shell = shell_class.instance(config=config, user_module=kernel.module, user_ns=kernel.ns)
    shell.kernel = kernel
    # Python's exit() and quit(), not IPython's: a machine is not left by a cell.
    for name in ("exit", "quit"):
        shell.user_ns.pop(name, None)
        shell.user_ns_hidden.pop(name, None)
    sys.modules["__main__"] = kernel.module
    shell.register_magic_function(_pip_magic(shell), "line", "pip")
    shell.set_hook("show_in_pager", _pager)
    return shell


def _pager(shell, shown, start=0, screen_lines=0):
    """IPython's pager (``obj?``, ``%magic``'s help): what it would page (text, or a MIME bundle
    from ``?``), as a display the cell gives, marked for a Jupyter front end's pager (a ``page``
    payload); other surfaces show its text. Never a terminal's pager: a machine has none."""
    shell.kernel.displays.publish(shown if isinstance(shown, dict) else {"text/plain": shown}, page=True)


def _pip_magic(shell):
    """``%pip``, as IPython's: pip of the machine's interpreter, which is its own environment's,
    so that an install changes nothing of the person's. Where the machine has no environment of
    its own (its interpreter could not make one), an install is refused, as the install tool
    refuses it: it would go into the person's own interpreter."""

    def pip(line):
        words = line.split()
        if sys.platform == "emscripten":
            # The sandbox installs from its package index, through its host, before a cell runs.
            print(
                "Not run: a sandbox machine takes packages from its package index with %pip install NAME; pip's other commands are not available."
            )
            return
        if words[:1] == ["install"] and sys.prefix == getattr(sys, "base_prefix", sys.prefix):
            print(
                f"Not installed: this machine has no environment of its own, and an install would change {sys.executable}, "
                f"which is yours. Install into it yourself ({sys.executable} -m pip {line}), then import it here."
            )
            return
        shell.system(f"{shlex.quote(sys.executable)} -m pip {line}")
        importlib.invalidate_caches()
        if words[:1] in (["install"], ["uninstall"]):
            print(
                "Note: a package the machine had imported keeps its old version until the machine is swapped out and back in."
            )

    return pip


_SHELL_CLASS = None


def _shell_class():
    global _SHELL_CLASS
    if _SHELL_CLASS is not None:
        return _SHELL_CLASS
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    class CellDisplayPublisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
            self.shell.kernel.displays.publish(data, metadata, transient, update)

        def clear_output(self, wait=False):
            self.shell.kernel.displays.clear(wait)

    class PerennialShell(InteractiveShell):
        """A shell that never reads a terminal: the kernel (``kernel``) runs the cells."""

        kernel = None

        def init_display_pub(self):
            self.display_pub = CellDisplayPublisher(parent=self, shell=self)
            self.configurables.append(self.display_pub)

        def run_line_magic(self, magic_name, line, _stack_depth=1):
            # One frame deeper than IPython expects: ``$name`` in the line is read from the caller.
            result = super().run_line_magic(magic_name, line, _stack_depth + 1)
            if self.kernel is not None:  # None while IPython sets itself up
                process_state.record_magic(self.kernel.magics, magic_name, line)
            return result

        def set_next_input(self, s, replace=False):
            # What a Jupyter front end puts in the next cell: one per cell, the last asked.
            if self.kernel is not None:
                self.kernel.next_input = {"text": s, "replace": replace}

        def enable_matplotlib(self, gui=None):
            # Refused before matplotlib switches to a backend it cannot show.
            from IPython.core.pylabtools import find_gui_and_backend

            self.enable_gui(find_gui_and_backend(gui, self.pylab_gui_select)[0])
            return super().enable_matplotlib(gui)

        def enable_gui(self, gui=None):
            # ``%matplotlib inline`` asks for no GUI event loop; figures come back as images.
            if gui not in (None, "inline"):
                from IPython.core.error import UsageError

                raise UsageError(
                    f"a Perennial machine has no window for {gui} to open: its figures come back as images (%matplotlib inline)"
                )

        def showtraceback(
            self, exc_tuple=None, filename=None, tb_offset=None, exception_only=False, running_compiled_code=False
        ):
            # A magic that catches the cell's error (``%time 1/0``) reports it as the kernel
            # reports any: the user's frames only, on stderr.
            exc = (exc_tuple or sys.exc_info())[1]
            if exc is not None:
                sys.stderr.write(self.kernel.format_exception(exc) + "\n")

    _SHELL_CLASS = PerennialShell
    return _SHELL_CLASS


def jupyter_traceback(shell, exc, cells, skipped):
    """The traceback as ipykernel sends it to a Jupyter front end: IPython's, coloured, each cell
    named by its ``In [n]`` (``cells``: the kernel's cell file names, ``<cell N>`` for In [N+1]),
    without the first ``skipped`` frames (the kernel's own). None where IPython cannot make it."""
    try:
        from IPython.core import ultratb

        names = shell.compile._filename_map
        for filename in cells:
            number = filename[len("<cell ") : -1]
            if filename.startswith("<cell ") and number.isdigit():
                names.setdefault(filename, int(number) + 1)
        formatters = getattr(shell, "_perennial_jupyter_tb", None)
        if formatters is None:
            # The shell's own stay uncoloured: they write the text other surfaces show.
            formatters = shell._perennial_jupyter_tb = (
                ultratb.AutoFormattedTB(mode="Context", color_scheme="Neutral"),
                ultratb.SyntaxTB(color_scheme="Neutral"),
            )
        if isinstance(exc, SyntaxError):  # as IPython shows a cell that does not compile: where, not how
            return formatters[1].structured_traceback(type(exc), exc, [])
        return formatters[0].structured_traceback(type(exc), exc, exc.__traceback__, tb_offset=skipped)
    except Exception:  # an IPython this does not know: the plain traceback stands
        return None


def hidden_names(shell, ns):
    """The names the shell put in the namespace (``In``, ``Out``, ``get_ipython``, ...), which are
    not the user's variables."""
    if shell is None:
        return set()
    hidden = shell.user_ns_hidden
    return {name for name in hidden if name in ns and ns[name] is hidden[name]}


def transform(shell, code):
    """The cell as Python: IPython's input transformation (magics, ``!``, ``?``, automagic)."""
    return shell.transform_cell(code)


def value_bundle(shell, value):
    """What IPython shows for a cell's value: (data, metadata)."""
    return shell.display_formatter.format(value)


def library_frame(filename):
    """A traceback frame of IPython's own machinery, which the user's traceback leaves out."""
    if filename.startswith("<decorator-gen-"):
        return True
    ipython = sys.modules.get("IPython")
    root = os.path.dirname(getattr(ipython, "__file__", "") or "")
    return bool(root) and filename.startswith(root + os.sep)


def usage_error(exc):
    """IPython's one-line report of a magic used wrongly, or None for other errors."""
    errors = sys.modules.get("IPython.core.error")
    if errors is not None and isinstance(exc, errors.UsageError):
        return f"UsageError: {exc}"
    return None
