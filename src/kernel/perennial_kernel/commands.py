"""The kernel commands both drivers take, by name (their arguments and answers are typed in
``src/engines/kernel-commands.ts``). Each handler gets the decoded message.
"""

import importlib
import sys

from . import files, introspection, process_state


def _hidden(handler):
    """``handler`` with the warnings it raises hidden: it touches the user's objects for
    Perennial, and what they warn of would show in the user's next cell."""

    def run(message):
        with process_state.warnings_hidden():
            return handler(message)

    return run


def command_handlers(kernel):
    return {
        "run": lambda m: kernel.run(m["code"], m.get("cell", 0)),
        "variables": _hidden(lambda m: introspection.variables(kernel.user_namespace())),
        "variable": _hidden(lambda m: introspection.variable(kernel.ns, m["name"])),
        "complete": _hidden(lambda m: introspection.complete(kernel.ns, m["code"], m["cursor"])),
        "inspect": _hidden(lambda m: introspection.inspect_name(kernel.ns, m["expr"])),
        "is_complete": lambda m: introspection.is_complete(m["code"]),
        # As a Jupyter kernel starts its shell: IPython's syntax, names (In, Out) and tracebacks.
        "start_ipython": lambda m: {"available": kernel.ipython() is not None},
        "reset": lambda m: kernel.reset(),
        "comm": lambda m: kernel.deliver_comm(m["message"]),
        "refresh_imports": lambda m: importlib.invalidate_caches(),
        "list_files": lambda m: files.list_files(m.get("path", "")),
        "read_file": lambda m: files.read_file(m["path"], int(m["limit"])),
        "write_file": lambda m: files.write_file(m["path"], m["content"]),
        "ping": lambda m: {"python": sys.version.split()[0], "platform": sys.platform},
        # The namespace pickled to a file and back: the python engine's swap, and a sandbox
        # machine's move to another Pyodide build (a transfer: the file goes, the losses are answered).
        "snapshot": _hidden(lambda m: kernel.snapshot(m["path"])),
        "restore": _hidden(lambda m: kernel.restore(m["path"], transfer=bool(m.get("transfer")))),
    }
