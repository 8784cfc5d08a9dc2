"""The kernel commands both drivers take, by name (their arguments and answers are typed in
``src/engines/kernel-commands.ts``). Each handler gets the decoded message.
"""

import importlib
import sys

from . import files, introspection


def command_handlers(kernel):
    return {
        "run": lambda m: kernel.run(m["code"], m.get("cell", 0)),
        "variables": lambda m: introspection.variables(kernel.user_namespace()),
        "variable": lambda m: introspection.variable(kernel.ns, m["name"]),
        "complete": lambda m: introspection.complete(kernel.ns, m["code"], m["cursor"]),
        "inspect": lambda m: introspection.inspect_name(kernel.ns, m["expr"]),
        "is_complete": lambda m: introspection.is_complete(m["code"]),
        "reset": lambda m: kernel.reset(),
        "refresh_imports": lambda m: importlib.invalidate_caches(),
        "list_files": lambda m: files.list_files(m.get("path", "")),
        "read_file": lambda m: files.read_file(m["path"], int(m["limit"])),
        "write_file": lambda m: files.write_file(m["path"], m["content"]),
        "ping": lambda m: {"python": sys.version.split()[0], "platform": sys.platform},
        # The namespace pickled to a file and back: the python engine's swap, and a sandbox
        # machine's move to another Pyodide build (a transfer: the file goes, the losses are answered).
        "snapshot": lambda m: kernel.snapshot(m["path"]),
        "restore": lambda m: kernel.restore(m["path"], transfer=bool(m.get("transfer"))),
    }
