"""The kernel's answers on a machine that runs without the kernel (hosted ForeverVM), where
Perennial's client asks by running an instruction. The instruction carries this module's source
and the kernel modules it needs (``output``, ``files``, ``introspection``), so a hosted machine
answers with the same code as a local one. It prints one JSON line and leaves no name behind:
the modules are loaded under a private package that is gone again once it has answered.
"""

import json
import sys
import types

_PACKAGE = "_perennial_hosted_kernel"


def answer(namespace, request):
    """Runs ``request`` (JSON: a kernel command, its message, and the modules' sources,
    dependencies first) against ``namespace``, the machine's globals, and prints its answer."""
    request = json.loads(request)
    try:
        modules = _load(request["modules"])
        result = _COMMANDS[request["command"]](modules, namespace, request["message"])
    finally:
        for name in [_PACKAGE, *(f"{_PACKAGE}.{module}" for module in request["modules"])]:
            sys.modules.pop(name, None)
    print(json.dumps(result))


def reset(namespace):
    """The kernel's ``reset`` without the kernel: the names go, but which modules the machine
    imported from its own folder is not known here, so they stay imported."""
    names = [name for name in namespace if not (name.startswith("__") and name.endswith("__"))]
    for name in names:
        del namespace[name]
    return {"cleared": len(names)}


_COMMANDS = {
    "variables": lambda modules, ns, message: modules["introspection"].variables(ns),
    "variable": lambda modules, ns, message: modules["introspection"].variable(ns, message["name"]),
    "inspect": lambda modules, ns, message: modules["introspection"].inspect_name(ns, message["expr"]),
    "reset": lambda modules, ns, message: reset(ns),
    "list_files": lambda modules, ns, message: modules["files"].list_files(message.get("path", "")),
    "read_file": lambda modules, ns, message: modules["files"].read_file(message["path"], int(message["limit"])),
    "write_file": lambda modules, ns, message: modules["files"].write_file(message["path"], message["content"]),
}


def _load(sources):
    package = types.ModuleType(_PACKAGE)
    package.__path__ = []
    sys.modules[_PACKAGE] = package
    modules = {}
    for name, source in sources.items():
        module = types.ModuleType(f"{_PACKAGE}.{name}")
        module.__package__ = _PACKAGE
        sys.modules[module.__name__] = module
        exec(compile(source, f"<perennial_kernel/{name}.py>", "exec"), module.__dict__)
        modules[name] = module
    return modules
