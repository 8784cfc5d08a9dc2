"""What a machine's namespace holds, without running the user's code: variables, completion,
and inspection of a dotted name. Each function answers one kernel command (``commands``).
The modules only some of them need are imported there: a machine's start imports only what
restoring it needs.
"""

import builtins
import re
import reprlib
import types

from .output import short_error

VARIABLE_REPR_CHARS = 200
FULL_REPR_CHARS = 100_000

_FutureFeature = type(__import__("__future__").annotations)
# A name or dotted path that ends where the cursor is, and does not follow another name's dot.
_COMPLETION_TOKEN = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*$|$")


def variables(ns):
    short = reprlib.Repr()
    short.maxstring = short.maxother = VARIABLE_REPR_CHARS
    short.maxlist = short.maxtuple = short.maxdict = short.maxset = 20
    out = []
    for name, value in list(ns.items()):
        if name.startswith("__") or name == "_" or isinstance(value, (types.ModuleType, _FutureFeature)):
            continue
        entry = {"name": name, "type": _type_name(value)}
        try:
            text = short.repr(value)
        except Exception as exc:
            text = f"<repr failed: {short_error(exc)}>"
        entry["repr"] = text[:VARIABLE_REPR_CHARS]
        size = _size_of(value)
        if size is not None:
            entry["size"] = size
        shape = getattr(value, "shape", None) if not isinstance(value, type) else None
        if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
            entry["shape"] = list(shape)
        out.append(entry)
    return out


def variable(ns, name):
    if name not in ns:
        raise KeyError(f"no variable named {name!r}")
    value = ns[name]
    size = _size_of(value)
    if isinstance(value, (list, tuple, dict, set, frozenset)) and (size or 0) <= 10_000:
        import pprint

        text = pprint.pformat(value, width=100)
    else:
        text = repr(value)
    truncated = len(text) > FULL_REPR_CHARS
    return {
        "name": name,
        "type": _type_name(value),
        "repr": text[:FULL_REPR_CHARS],
        "truncated": truncated,
        **({"size": size} if size is not None else {}),
    }


def complete(ns, code, cursor):
    """What the name or dotted path before ``cursor`` can become, as rlcompleter sees it
    (callables end in "("), and where that name starts. Only names are looked up: nothing
    is called but what attribute access itself runs."""
    token = _COMPLETION_TOKEN.search(code[:cursor]).group()
    import rlcompleter

    completer = rlcompleter.Completer(ns)
    matches = []
    for state in range(500 if token else 0):
        match = completer.complete(token, state)
        if match is None:
            break
        if match not in matches:
            matches.append(match)
    return {"matches": matches, "start": cursor - len(token)}


# What an inspection gives of an object's source (a notebook's ``??``) at most; the hosted
# emulation sends this module as an instruction, which must not name the interactive shell.
_MAX_SOURCE = 100_000


def inspect_name(ns, expr):
    import inspect

    value = _resolve(ns, expr)
    try:
        signature = str(inspect.signature(value))
    except (TypeError, ValueError):
        signature = None
    try:
        source = inspect.getsource(value)[:_MAX_SOURCE]
    except (TypeError, OSError):  # a builtin, or code whose text is gone
        source = None
    try:
        file = inspect.getsourcefile(value) or inspect.getfile(value)
    except TypeError:
        file = None
    return {
        "name": expr,
        "type": _type_name(value),
        "signature": signature,
        "doc": inspect.getdoc(value),
        "source": source,
        "file": file,
    }


def is_complete(code):
    """Like the interactive prompt: "incomplete" asks for another line."""
    import codeop

    try:
        compiled = codeop.compile_command(code, "<input>", "single")
    except (SyntaxError, ValueError, OverflowError):
        return "invalid"
    return "incomplete" if compiled is None else "complete"


def _resolve(ns, expr):
    """Looks up a dotted name without calling anything."""
    parts = expr.strip().split(".")
    if not all(p.isidentifier() for p in parts):
        raise ValueError(f"not a dotted name: {expr!r}")
    head = parts[0]
    if head in ns:
        value = ns[head]
    elif hasattr(builtins, head):
        value = getattr(builtins, head)
    else:
        raise NameError(f"name {head!r} is not defined")
    import inspect

    for part in parts[1:]:
        value = inspect.getattr_static(value, part)
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
    return value


def _type_name(value):
    kind = type(value)
    module = kind.__module__
    if module in ("builtins", "__main__"):
        return kind.__qualname__
    return f"{module}.{kind.__qualname__}"


def _size_of(value):
    if isinstance(value, (str, bytes, bytearray, list, tuple, dict, set, frozenset, range)):
        return len(value)
    if isinstance(value, type) or not hasattr(type(value), "__len__"):
        return None
    try:
        size = len(value)
    except Exception:
        return None
    return size if isinstance(size, int) else None
