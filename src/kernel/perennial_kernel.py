"""Perennial kernel: runs REPL cells in one persistent namespace.

The same module serves both engines. ``Kernel`` holds the namespace and knows the result semantics
(last expression's repr, streamed output, tracebacks of the user's cells, figures, introspection,
swap to a file). ``main()`` is the CPython driver used by the python engine: commands arrive as JSON
lines on fd 3 and events leave as JSON lines on fd 4, so the user's stdout is never the channel.
The sandbox engine drives ``Kernel`` from JavaScript instead and never calls ``main()``.
"""

import ast
import base64
import builtins
import collections
import dataclasses
import enum
import functools
import importlib
import io
import json
import linecache
import marshal
import os
import pickle
import pickletools
import pprint
import re
import reprlib
import rlcompleter
import signal
import sys
import textwrap
import threading
import time
import traceback
import types
import inspect

SNAPSHOT_MAGIC = b"PERENNIAL-PY-SNAPSHOT-1\n"
DEFAULT_OUTPUT_LIMIT = 1 << 20
VARIABLE_REPR_CHARS = 200
FULL_REPR_CHARS = 100_000
MAX_KEPT_CELLS = 2000
FUTURE_FLAGS = 0
for _feature in __import__("__future__").all_feature_names:
    FUTURE_FLAGS |= getattr(__import__("__future__"), _feature).compiler_flag

_FutureFeature = type(__import__("__future__").annotations)
_KERNEL = None  # the kernel of this process; pickled functions rebuild against its namespace


class OutputSink:
    """Collects stdout/stderr text of a cell, enforcing the per-instruction byte cap.

    ``send(stream, text)`` is called with coalesced text; the host splits it into line chunks.
    """

    def __init__(self, send, limit=DEFAULT_OUTPUT_LIMIT):
        self._send = send
        self.limit = limit
        self._lock = threading.RLock()
        self._pending = []  # [stream, [parts], size]
        self._used = 0
        self._dropped = 0
        self._dropped_stream = "stdout"
        self._last_flush = time.monotonic()
        self.wake = threading.Event()
        # Text waits to be sent with what follows only where a thread sends it after a pause;
        # without one (Pyodide), what a cell prints before a long computation would wait for its end.
        self.coalesce = True

    def reset(self):
        with self._lock:
            self._used = 0
            self._dropped = 0

    def write(self, stream, text):
        if not text:
            return
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        with self._lock:
            room = self.limit - self._used
            if room <= 0:
                self._dropped += size
                self._dropped_stream = stream
                return
            if size > room:
                text = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
                self._dropped += size - room
                self._dropped_stream = stream
                size = room
            self._used += size
            if not self.coalesce:
                self._send(stream, text)
                return
            if self._pending and self._pending[0] != stream:
                self._flush_locked()
            if not self._pending:
                self._pending = [stream, [], 0]
            self._pending[1].append(text)
            self._pending[2] += size
            if self._pending[2] >= 16384 or time.monotonic() - self._last_flush > 0.05:
                self._flush_locked()
            else:
                self.wake.set()

    def flush(self):
        with self._lock:
            self._flush_locked()

    def finish(self):
        """Flushes everything and appends the truncation marker if the cap was reached."""
        with self._lock:
            self._flush_locked()
            if self._dropped:
                marker = (
                    f"\n[perennial: output truncated at {self.limit} bytes; "
                    f"{self._dropped} more bytes were dropped]\n"
                )
                self._send(self._dropped_stream, marker)
                self._dropped = 0

    def _flush_locked(self):
        if self._pending:
            stream, parts, _ = self._pending
            self._pending = []
            self._send(stream, "".join(parts))
        self._last_flush = time.monotonic()


class StreamWriter(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` replacement: unbuffered text into the kernel's sink."""

    def __init__(self, sink, name, fd):
        self._sink = sink
        self._name = name
        self._fd = fd

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "backslashreplace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        # Subprocesses and C code write to the real descriptor, which the host also captures.
        if self._fd is None:
            raise io.UnsupportedOperation("fileno")
        return self._fd

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._sink.write(self._name, text)
        return len(text)

    def flush(self):
        self._sink.flush()

    @property
    def buffer(self):
        return _BinaryWriter(self)


def _stream_writer(sink, name, fd, earlier):
    """A ``StreamWriter`` into ``sink``: the earlier kernel's own object when there is one, made
    over into this kernel's class, so that what code kept of it (a logging handler) writes on."""
    if earlier is None:
        return StreamWriter(sink, name, fd)
    earlier.__class__ = StreamWriter
    StreamWriter.__init__(earlier, sink, name, fd)
    return earlier


class _BinaryWriter(io.RawIOBase):
    """``sys.stdout.buffer``: bytes are decoded and join the text stream."""

    def __init__(self, text):
        self._text = text

    def writable(self):
        return True

    def write(self, data):
        self._text.write(bytes(data).decode("utf-8", "backslashreplace"))
        return len(data)


class _EmptyCell:
    """Stands for an unassigned closure cell in a pickled function."""

    def __reduce__(self):
        return "EMPTY_CELL"


EMPTY_CELL = _EmptyCell()


def _no_input(prompt=""):
    sys.stdout.write(str(prompt))
    raise EOFError("input() is not available: a machine has no keyboard; put the value in the code instead")


# The cache tag of the Python that wrote the snapshot being restored, while it is restored.
_RESTORING_TAG = None


def _make_function(code_bytes, name, ncells, own_globals):
    """A REPL function as snapshots of builds before 0.2.0 saved it: its bytecode alone, which
    only the Python that wrote it can run."""
    if _RESTORING_TAG not in (None, sys.implementation.cache_tag):
        raise _Unsaveable(f"its bytecode is for {_RESTORING_TAG}, and the Perennial that saved it kept no source")
    return _new_function(marshal.loads(code_bytes), name, own_globals)


def _rebuild_function(code_bytes, cache_tag, source, name, own_globals):
    """A REPL function: its bytecode when this is the Python that wrote it, else compiled again
    from its source (``_function_source``), as after a change of interpreter or of Pyodide."""
    if cache_tag == sys.implementation.cache_tag:
        code = marshal.loads(code_bytes)
    elif source is not None:
        code = _compile_function(*source)
    else:
        raise _Unsaveable(f"its bytecode is for {cache_tag}, and its source could not be found when it was saved")
    return _new_function(code, name, own_globals)


def _new_function(code, name, own_globals):
    if own_globals is None:
        globs = _KERNEL.ns
    else:
        globs = dict(own_globals)
        globs.setdefault("__builtins__", builtins)
    closure = tuple(types.CellType() for _ in code.co_freevars) or None
    return types.FunctionType(code, globs, name, None, closure)


def _set_function_state(func, state):
    """``closure``: the values of the free variables, by name (or in their order, in snapshots of
    builds before 0.2.0)."""
    closure = state.pop("closure")
    cells = func.__closure__ or ()
    values = [closure.get(n, EMPTY_CELL) for n in func.__code__.co_freevars] if isinstance(closure, dict) else closure
    for cell, value in zip(cells, values):
        if value is not EMPTY_CELL:
            cell.cell_contents = value
    for key, value in state.items():
        setattr(func, key, value)
    return func


_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _function_source(code):
    """Where a REPL function's code can be compiled again from: (its source, the line it starts
    on, the cell's name, its free variables), or None. The source is the ``def`` (without its
    decorators, which have run) or the ``lambda``, found in the cell it was defined in."""
    text = "".join(linecache.getlines(code.co_filename))
    tree = _parse_cell(text) if text else None
    if tree is None:
        return None
    lambda_args = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, _FUNCTION_NODES):
            continue
        first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
        if first != code.co_firstlineno and node.lineno != code.co_firstlineno:
            continue
        if isinstance(node, ast.Lambda):
            names = tuple(a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs)
            if code.co_name == "<lambda>" and names == lambda_args:
                found.append(node)
        elif node.name == code.co_name:
            found.append(node)
    if len(found) != 1:
        return None  # none, or several alike on one line: which one is not known
    segment = ast.get_source_segment(text, found[0], padded=True)
    return None if segment is None else (segment, found[0].lineno, code.co_filename, code.co_freevars)


@functools.lru_cache(maxsize=64)
def _parse_cell(text):
    """A cell's syntax tree, parsed once for all the functions a snapshot finds in it."""
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _compile_function(segment, lineno, filename, freevars):
    """The code of a function from its source (``_function_source``), compiled in a scope that
    gives it the same free variables, at its own lines of its cell."""
    node = ast.parse(textwrap.dedent(segment)).body[0]
    ast.increment_lineno(node, lineno - 1)
    name = getattr(node, "name", "<lambda>")
    if isinstance(node, ast.Expr):  # a lambda
        node = ast.Assign(targets=[ast.Name("__perennial_function__", ast.Store())], value=node.value, lineno=lineno)
    # A scope that assigns each free variable makes them the function's cells, as they were. The
    # def's own name is declared global there, as it was: else a recursive call would be a cell too.
    scope = ast.parse("def __perennial_scope__():\n    pass").body[0]
    own = [] if name == "<lambda>" or name in freevars else [ast.parse(f"global {name}").body[0]]
    scope.body = own + [ast.parse(f"{free} = None").body[0] for free in freevars] + [node]
    module = ast.Module(body=[scope], type_ignores=[])
    ast.fix_missing_locations(module)
    # By name: since Python 3.14 an annotated function has an `__annotate__` code object beside it.
    outer = next(c for c in compile(module, filename, "exec").co_consts if isinstance(c, types.CodeType) and c.co_name == "__perennial_scope__")
    return next(c for c in outer.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def _make_class(metaclass, name, bases, slots, qualname):
    def body(ns):
        if slots is not None:
            ns["__slots__"] = slots
        ns["__qualname__"] = qualname
        ns["__module__"] = "__main__"

    return types.new_class(name, bases, {"metaclass": metaclass}, body)


def _set_class_state(cls, attrs):
    for key, value in attrs.items():
        setattr(cls, key, value)
    import abc

    if isinstance(cls, abc.ABCMeta) and hasattr(abc, "update_abstractmethods"):  # Python 3.10+
        abc.update_abstractmethods(cls)
    return cls


# What EnumType builds from the members; the rest of an enum's class dict is set like any class's.
_ENUM_INTERNALS = frozenset(
    {"__new__", "_member_names_", "_member_map_", "_member_type_", "_value2member_map_", "_unhashable_values_",
     "_new_member_", "_use_args_", "_value_repr_", "_boundary_", "_flag_mask_", "_singles_mask_", "_all_bits_",
     "_inverted_", "__new_member__"}
)


def _reduce_enum(cls):
    """An enum class is rebuilt with its members' values (aliases included), then its methods and
    the members' own attributes are set, as set on any class once it exists."""
    members = {name: member._value_ for name, member in cls.__members__.items()}
    attrs = {k: v for k, v in cls.__dict__.items() if k not in _CLASS_SKIP and k not in _ENUM_INTERNALS and k not in members}
    member_attrs = {
        name: {k: v for k, v in vars(member).items() if not (k.startswith("_") and k.endswith("_"))}
        for name, member in cls.__members__.items()
        if member.__dict__
    }
    args = (type(cls), cls.__name__, cls.__bases__, members, cls.__qualname__)
    return _make_enum, args, (attrs, member_attrs), None, None, _set_enum_state


def _make_enum(metaclass, name, bases, members, qualname):
    namespace = metaclass.__prepare__(name, bases)
    for key, value in members.items():
        namespace[key] = value
    namespace["__qualname__"] = qualname
    namespace["__module__"] = "__main__"
    return metaclass(name, bases, namespace)


def _set_enum_state(cls, state):
    attrs, member_attrs = state
    for name, values in member_attrs.items():
        vars(cls.__members__[name]).update(values)
    return _set_class_state(cls, attrs)


def _reduce_namedtuple(cls):
    """A namedtuple class (typing.NamedTuple's too) is made again by ``namedtuple`` where it is
    loaded: what that generates differs between Python versions. The class's own methods and
    attributes are then set as on any class."""
    generated = collections.namedtuple(cls.__name__, cls._fields)
    attrs = {k: v for k, v in cls.__dict__.items() if k not in _CLASS_SKIP and (k not in vars(generated) or k == "__doc__")}
    if attrs.get("__doc__") == generated.__doc__:
        del attrs["__doc__"]
    defaults = tuple(cls._field_defaults[f] for f in cls._fields if f in cls._field_defaults)
    return _make_namedtuple, (cls.__name__, cls._fields, defaults, cls.__qualname__), attrs, None, None, _set_class_state


def _make_namedtuple(name, fields, defaults, qualname):
    cls = collections.namedtuple(name, fields, defaults=defaults, module="__main__")
    cls.__qualname__ = qualname
    return cls


# What the dataclass decorator writes into a class besides the methods it generates.
_DATACLASS_MADE = frozenset({"__dataclass_params__", "__dataclass_fields__", "__match_args__"})


def _dataclass_state(cls, params, attrs):
    """A dataclass is saved as its class without what ``@dataclass`` generated (those methods are
    compiled from text of its own, and differ between Python versions), with the decorator's
    options and its fields as plain values, so that the decorator makes them again where it is
    loaded (``_set_dataclass_state``)."""
    options = {name: getattr(params, name) for name in _DATACLASS_OPTIONS if hasattr(params, name)}
    fields = {
        name: {option: getattr(f, option) for option in _FIELD_OPTIONS if hasattr(f, option)}
        for name, f in cls.__dict__["__dataclass_fields__"].items()
        if f._field_type is dataclasses._FIELD
    }
    kept = {k: v for k, v in attrs.items() if k not in _DATACLASS_MADE and not _made_by_dataclass(v)}
    return kept, options, fields


_DATACLASS_OPTIONS = ("init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only", "weakref_slot")
_FIELD_OPTIONS = ("default", "default_factory", "init", "repr", "hash", "compare", "metadata", "kw_only", "doc")


def _made_by_dataclass(value):
    """Whether a class attribute is a method ``@dataclass`` generated (compiled from a string)."""
    func = getattr(value, "__wrapped__", value)
    return isinstance(func, types.FunctionType) and func.__code__.co_filename == "<string>"


def _set_dataclass_state(cls, state):
    attrs, options, fields = state
    _set_class_state(cls, attrs)
    accepted = inspect.signature(dataclasses.field).parameters
    for name, saved in fields.items():
        given = {k: v for k, v in saved.items() if k in accepted and v is not dataclasses.MISSING}
        setattr(cls, name, dataclasses.field(**given))
    accepted = inspect.signature(dataclasses.dataclass).parameters
    return dataclasses.dataclass(cls, **{k: v for k, v in options.items() if k in accepted})


def _make_mappingproxy(mapping):
    return types.MappingProxyType(mapping)


def _code_global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_global_names(const)
    return names


_CLASS_SKIP = frozenset({"__dict__", "__weakref__", "_abc_impl", "__slots__", "__qualname__"})


_LOCK_TYPE = type(threading.Lock())
_RLOCK_TYPE = type(threading.RLock())
_SUSPENDED_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)


# Streams that are not the operating system's: in-memory buffers and the kernel's stdout/stderr.
_NOT_DESCRIPTORS = (io.BytesIO, io.StringIO, StreamWriter)


class _Unsaveable(TypeError):
    """Something bound to the running process, which no pickler may pretend to save."""


def _make_lock(locked):
    lock = threading.Lock()
    if locked:
        lock.acquire()
    return lock


def _make_closed_file(name, mode, raw):
    """A closed file like the one saved (type, name, mode): a closed file holds nothing else, and
    opening the real file again could truncate it."""
    f = open(os.devnull, mode.replace("x", "w"), buffering=0 if raw else -1)
    inner = getattr(getattr(f, "buffer", f), "raw", f)
    inner.name = name
    f.close()
    return f


def _reduce_process_bound(obj):
    """Saves what belongs to the process when it can be rebuilt as it was (a lock, a closed file,
    the kernel's streams), and refuses, saying why, what cannot: dill would bring back a running
    thread as a Thread that claims to run, and reopen a file by name."""
    if isinstance(obj, _LOCK_TYPE):
        return _make_lock, (obj.locked(),)
    if isinstance(obj, _RLOCK_TYPE):
        if repr(obj).startswith("<unlocked"):
            return threading.RLock, ()
        raise _Unsaveable("an RLock held at the swap cannot be held again after it")
    if isinstance(obj, threading.Thread) and obj.is_alive():
        raise _Unsaveable("a running thread stops at a swap")
    if isinstance(obj, _SUSPENDED_TYPES):
        raise _Unsaveable(f"a paused {type(obj).__name__} cannot be pickled (only a sandbox machine's memory snapshot keeps one)")
    if _KERNEL is not None and (obj is _KERNEL.stdout or obj is _KERNEL.stderr):
        return getattr, (sys, "stdout" if obj is _KERNEL.stdout else "stderr")
    if isinstance(obj, (io.FileIO, io.BufferedIOBase, io.TextIOWrapper)) and not isinstance(obj, _NOT_DESCRIPTORS) and obj.closed:
        return _make_closed_file, (obj.name, obj.mode, isinstance(obj, io.FileIO))
    reason = _descriptor_bound(obj)
    if reason:
        raise _Unsaveable(reason)
    return NotImplemented


class NamespacePickler(pickle.Pickler):
    """The C pickler, taught to save what the REPL defines: functions and classes of the
    namespace by value, modules by name, and the dataclasses sentinels by reference."""

    def reducer_override(self, obj):
        bound = _reduce_process_bound(obj)
        if bound is not NotImplemented:
            return bound
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if isinstance(obj, types.FunctionType) and obj.__module__ == "__main__":
            return self._reduce_function(obj)
        if isinstance(obj, type) and obj.__module__ == "__main__":
            return self._reduce_class(obj)
        if isinstance(obj, property):
            return property, (obj.fget, obj.fset, obj.fdel, obj.__doc__)
        if isinstance(obj, (staticmethod, classmethod)):
            return type(obj), (obj.__func__,)
        if isinstance(obj, types.MappingProxyType):  # e.g. dataclass field metadata
            return _make_mappingproxy, (dict(obj),)
        sentinel = _DATACLASS_SENTINELS.get(id(obj))
        if sentinel is not None:
            return getattr, (dataclasses, sentinel)
        return NotImplemented

    @staticmethod
    def _reduce_function(func):
        ns = _KERNEL.ns
        code = func.__code__
        if func.__globals__ is ns:
            own_globals = None
        else:
            own_globals = {n: func.__globals__[n] for n in _code_global_names(code) if n in func.__globals__}
        closure = {}
        for name, cell in zip(code.co_freevars, func.__closure__ or ()):
            try:
                closure[name] = cell.cell_contents
            except ValueError:
                closure[name] = EMPTY_CELL
        state = {
            "closure": closure,
            "__qualname__": func.__qualname__,
            "__defaults__": func.__defaults__,
            "__kwdefaults__": func.__kwdefaults__,
            "__annotations__": func.__annotations__,
            "__doc__": func.__doc__,
            "__module__": func.__module__,
            "__dict__": func.__dict__,
        }
        args = (marshal.dumps(code), sys.implementation.cache_tag, _function_source(code), func.__name__, own_globals)
        return _rebuild_function, args, state, None, None, _set_function_state

    @staticmethod
    def _reduce_class(cls):
        if isinstance(cls, enum.EnumMeta):
            return _reduce_enum(cls)
        if issubclass(cls, tuple) and "_fields" in cls.__dict__:
            return _reduce_namedtuple(cls)
        slots = cls.__dict__.get("__slots__")
        if isinstance(slots, str):
            slots = (slots,)
        slot_names = set(slots or ())
        attrs = {
            k: v
            for k, v in cls.__dict__.items()
            if k not in _CLASS_SKIP and k not in slot_names
        }
        args = (type(cls), cls.__name__, cls.__bases__, slots, cls.__qualname__)
        params = cls.__dict__.get("__dataclass_params__")
        if params is not None and not getattr(params, "slots", False):
            return _make_class, args, _dataclass_state(cls, params, attrs), None, None, _set_dataclass_state
        return _make_class, args, attrs, None, None, _set_class_state


_DATACLASS_SENTINELS = {
    id(getattr(dataclasses, n)): n
    for n in ("MISSING", "KW_ONLY", "_HAS_DEFAULT_FACTORY", "_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR")
    if hasattr(dataclasses, n)
}


def _fallback_picklers():
    """Picklers tried, one variable at a time, for what the namespace pickler cannot save; each
    is held to the same rules for what belongs to the process."""
    if os.environ.get("PERENNIAL_SERIALIZER") == "pickle":
        return []
    found = []
    for name in ("dill", "cloudpickle"):
        try:
            found.append((name, _guarded(importlib.import_module(name).Pickler)))
        except Exception:
            pass
    return found


def _guarded(pickler_class):
    class Guarded(pickler_class):
        def reducer_override(self, obj):
            bound = _reduce_process_bound(obj)
            if bound is not NotImplemented:
                return bound
            parent = getattr(super(), "reducer_override", None)
            return parent(obj) if parent else NotImplemented

    return Guarded


def _save_order(ns, names):
    """REPL classes, then REPL functions, then the rest: what others refer to is saved first, so an
    instance that fails to save or load never takes its class with it."""

    def rank(name):
        value = ns[name]
        main = getattr(value, "__module__", None) == "__main__"
        if isinstance(value, type) and main:
            return 0
        return 1 if isinstance(value, types.FunctionType) and main else 2

    return sorted(names, key=rank)


class NewerSnapshotError(ValueError):
    """A snapshot in a format a newer Perennial wrote: sound, only not for this build."""


class _WriteFailed(BaseException):
    """A write to the snapshot file failed (a full disk): not an Exception, so that no value is
    taken for unsaveable because of it; the whole snapshot fails instead."""


class _SnapshotFile:
    """The snapshot file as the picklers see it."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        try:
            return self._f.write(data)
        except OSError as exc:
            raise _WriteFailed(exc) from exc


def _write_segments(f, items):
    """Writes each (name, value) as a pickle segment. All share one memo, so an object in two
    variables is saved once and comes back shared. A value that fails restarts the stream without
    it (the memo would name objects whose bytes were thrown away); what the namespace pickler
    cannot save is then tried alone with dill or cloudpickle. Returns (segments, {name: reason})."""
    failed = {}
    for name, value in items:
        try:
            _reduce_process_bound(value)
        except _Unsaveable as exc:
            failed[name] = exc
    start_of_stream = f.tell()
    culprit = True
    while culprit:
        f.seek(start_of_stream)
        f.truncate()
        pickler = NamespacePickler(_SnapshotFile(f), protocol=pickle.HIGHEST_PROTOCOL)
        segments, culprit = [], None
        for name, value in items:
            if name in failed:
                continue
            start = f.tell()
            try:
                pickler.dump(value)
            except Exception as exc:
                failed[name], culprit = exc, name
                break
            segments.append([name, start, f.tell(), "pickle"])
    values = dict(items)
    for name, error in list(failed.items()):
        if not isinstance(error, _Unsaveable) and _write_with_fallback(f, name, values[name], segments):
            del failed[name]
    return segments, {name: str(e) if isinstance(e, _Unsaveable) else _short_error(e) for name, e in failed.items()}


def _write_with_fallback(f, name, value, segments):
    start = f.tell()
    for label, pickler_class in _fallback_picklers():
        try:
            pickler_class(_SnapshotFile(f), protocol=pickle.HIGHEST_PROTOCOL).dump(value)
        except Exception as exc:
            f.seek(start)
            f.truncate()
            if isinstance(exc, _Unsaveable):
                return False
            continue
        segments.append([name, start, f.tell(), label])
        return True
    return False


def _load_segments(blob, segments, lost):
    """Returns [(name, value)] for the segments that load and adds the others to ``lost``. One C
    unpickler reads the segments of the shared memo in turn. After a failure it cannot go on: it
    keeps stale read-ahead, and its memo lacks what the failed segment would have made, which
    shifts every later index. So then the whole snapshot is read again by the mended path."""
    stream = io.BytesIO(blob)
    unpickler = pickle.Unpickler(stream)
    loaded, lost_alone = [], []
    for name, start, stop, label in segments:
        if label != "pickle":
            _load_alone(blob[start:stop], name, label, loaded, lost_alone)
            continue
        try:
            stream.seek(start)
            loaded.append((name, unpickler.load()))
        except BaseException:
            return _load_segments_mended(blob, segments, lost)
    lost.extend(lost_alone)
    return loaded


def _load_alone(data, name, label, loaded, lost):
    try:
        loaded.append((name, importlib.import_module(label).loads(data)))
    except BaseException as exc:
        lost.append({"name": _display_name(name), "reason": _short_error(exc)})


class _LostEntry:
    """Marks a memo index that a failed segment would have filled."""

    def __init__(self, owner):
        self.owner = owner


class _MendedMemo(dict):
    def __getitem__(self, index):
        value = dict.__getitem__(self, index)
        if isinstance(value, _LostEntry):
            raise pickle.UnpicklingError(f"it shares objects with {value.owner}, which could not be restored")
        return value


def _load_segments_mended(blob, segments, lost):
    """Reads each segment with a fresh pure-Python unpickler over one memo dict, mended after a
    failure: each index the failed segment would have made (its MEMOIZE opcodes) gets what the
    pickle states outright there (``_stated_memo``), or else a mark, so that a later segment that
    refers to a marked one fails and says why, and the others get the right objects."""
    memo = _MendedMemo()
    loaded = []
    for name, start, stop, label in segments:
        data = blob[start:stop]
        if label != "pickle":
            _load_alone(data, name, label, loaded, lost)
            continue
        made_before = len(memo)
        try:
            unpickler = pickle._Unpickler(io.BytesIO(data))
            unpickler.memo = memo
            loaded.append((name, unpickler.load()))
        except BaseException as exc:
            lost.append({"name": _display_name(name), "reason": _short_error(exc)})
            dict.update(memo, _stated_memo(data, memo, made_before, _LostEntry(_display_name(name))))
    return loaded


# Opcodes that push a value given in the pickle itself.
_STATED = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING",
           "SHORT_BINBYTES", "BINBYTES", "BINBYTES8", "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
           "FLOAT", "BINFLOAT"}
_CONSTANTS = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False}
_MARK = object()


def _stated_memo(data, memo, first, unknown):
    """The memo entries a segment makes, where the pickle states them outright: strings, numbers,
    and objects named by module and name (classes, functions, modules), imported as the unpickler
    would. Whatever else it makes is ``unknown``: a failed segment's objects may be half built.
    Most segments share names like ``builtins.int`` with others: without this, one variable that
    fails to load would take every later one that mentions the same class with it."""
    stack, made, index = [], {}, first

    def known(value):
        return value is not unknown and value is not _MARK

    for op, arg, _ in pickletools.genops(data):
        name = op.name
        if name in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
            key = index if name == "MEMOIZE" else arg
            made[key] = stack[-1] if stack and known(stack[-1]) else unknown
            index += name == "MEMOIZE"
            continue
        if name in ("GET", "BINGET", "LONG_BINGET"):
            value = made.get(arg, dict.get(memo, arg, unknown))
            stack.append(value if not isinstance(value, _LostEntry) else unknown)
            continue
        if name in _STATED:
            stack.append(arg)
            continue
        if name in _CONSTANTS:
            stack.append(_CONSTANTS[name])
            continue
        if name == "GLOBAL":
            stack.append(_named_object(*arg.split(" ", 1), unknown))
            continue
        if name == "STACK_GLOBAL":
            qualname = stack.pop() if stack else unknown
            module = stack.pop() if stack else unknown
            stack.append(_named_object(module, qualname, unknown))
            continue
        if name == "MARK":
            stack.append(_MARK)
            continue
        before = op.stack_before
        if pickletools.markobject in before:
            while stack and stack.pop() is not _MARK:
                pass
            pops = before.index(pickletools.markobject)
        else:
            pops = len(before)
        del stack[len(stack) - min(pops, len(stack)):]
        stack.extend(unknown for _ in op.stack_after)
    return made


def _named_object(module, qualname, unknown):
    if not (isinstance(module, str) and isinstance(qualname, str)) or module == "__main__":
        return unknown
    try:
        value = importlib.import_module(module)
        for part in qualname.split("."):
            value = getattr(value, part)
        return value
    except Exception:
        return unknown


def _short_error(exc):
    return f"{type(exc).__name__}: {exc}"


def _rebase(old, new):
    """Maps a path under the workdir a snapshot was taken in to the same place under this one."""
    if not old or old == new:
        return lambda path: path
    prefix = old.rstrip(os.sep) + os.sep
    return lambda path: new + path[len(old):] if path == old or path.startswith(prefix) else path


# A name or dotted path that ends where the cursor is, and does not follow another name's dot.
_COMPLETION_TOKEN = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*$|$")


class Kernel:
    """One REPL: a namespace, result semantics, introspection and swap.

    ``adopt``: the kernel of an earlier build, running in this interpreter, that this one takes
    over (a sandbox machine carries its kernel in its memory): its namespace, cells and losses,
    and the stream objects that code may still hold."""

    def __init__(self, send_output, output_limit=DEFAULT_OUTPUT_LIMIT, fds=(None, None), adopt=None):
        global _KERNEL
        _KERNEL = self
        if adopt is None:
            self.module = types.ModuleType("__main__")
            self.module.__dict__["__builtins__"] = builtins
        else:
            self.module = adopt.module
        sys.modules["__main__"] = self.module
        self.ns = self.module.__dict__
        self.sink = OutputSink(send_output, output_limit)
        self.stdout = _stream_writer(self.sink, "stdout", fds[0], getattr(adopt, "stdout", None))
        self.stderr = _stream_writer(self.sink, "stderr", fds[1], getattr(adopt, "stderr", None))
        sys.stdout, sys.stderr = self.stdout, self.stderr
        builtins.input = _no_input
        self.running = False
        self.future_flags = getattr(adopt, "future_flags", 0)
        self.cells = dict(getattr(adopt, "cells", {}))
        self.images = []
        # Where the machine started: a snapshot's paths under it move with the machine (a fork).
        self.workdir = getattr(adopt, "workdir", None) or os.getcwd()
        self.lost = list(getattr(adopt, "lost", []))
        self._loop = getattr(adopt, "_loop", None)
        _install_pyplot_hook(self)

    # -- running cells ---------------------------------------------------------------------------

    def run(self, code, cell):
        """Runs one cell to the end; returns an ExecResult dict (``value``/``data`` or ``error``).
        Awaits in the cell run on the kernel's own event loop."""
        steps = self._run_steps(code, cell)
        sent, thrown = None, None
        while True:
            awaitable, result = _resume(steps, sent, thrown)
            if awaitable is None:
                return result
            sent, thrown = None, None
            try:
                sent = self._event_loop().run_until_complete(awaitable)
            except BaseException as exc:  # noqa: BLE001 - handed back to the cell
                thrown = exc

    async def run_async(self, code, cell):
        """``run`` for a host whose event loop must keep turning (Pyodide): awaits in the cell
        are awaited here instead of blocking."""
        steps = self._run_steps(code, cell)
        sent, thrown = None, None
        while True:
            awaitable, result = _resume(steps, sent, thrown)
            if awaitable is None:
                return result
            sent, thrown = None, None
            try:
                sent = await awaitable
            except BaseException as exc:  # noqa: BLE001 - handed back to the cell
                thrown = exc

    def _event_loop(self):
        import asyncio

        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        return self._loop

    def _run_steps(self, code, cell):
        """The cell, as a generator that yields each awaitable it needs the result of."""
        filename = f"<cell {cell}>"
        self._remember_cell(filename, code)
        self.sink.reset()
        self.images = []
        result = {}
        started = time.perf_counter()
        self.running = True
        try:
            body, last = self._compile(code, filename)
            yield from self._evaluate(body)
            value = (yield from self._evaluate(last)) if last is not None else None
            result["value"] = None
            if value is not None:
                self.ns["_"] = value
                result["value"] = self._bounded_repr(value)
                png = _repr_png(value)
                if png:
                    self.images.append(png)
        except BaseException as exc:  # noqa: BLE001 - a cell may raise anything, even SystemExit
            self.running = False
            result = {"error": self._format_exception(exc)}
        finally:
            self.running = False
        try:
            self._capture_figures()
        except Exception as exc:  # a broken figure must not lose the cell's result
            self.stderr.write(f"perennial: could not render a figure: {_short_error(exc)}\n")
        self.sink.finish()
        data = {}
        if self.images:
            data["png"] = self.images[0]
            data["images"] = [{"mimeType": "image/png", "data": d} for d in self.images]
        if self.lost:
            data["lost"] = self.lost
            self.lost = []
        if "error" not in result:
            result["data"] = data or None
        elif data:
            result["data"] = data
        result["runtime_ms"] = int((time.perf_counter() - started) * 1000)
        return result

    def _compile(self, code, filename):
        flags = self.future_flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        tree = compile(code, filename, "exec", flags | ast.PyCF_ONLY_AST, dont_inherit=True)
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(code, tree.body[-1]):
            last = ast.Expression(tree.body.pop().value)
        body = compile(tree, filename, "exec", flags, dont_inherit=True)
        self.future_flags |= body.co_flags & FUTURE_FLAGS
        if last is not None:
            last = compile(last, filename, "eval", flags, dont_inherit=True)
        return body, last

    def _evaluate(self, code):
        if code.co_flags & inspect.CO_COROUTINE:
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

    def _format_exception(self, exc):
        """The traceback as the user should see it: their cells and the libraries they called,
        without the kernel's own frames (the runner above the cell, the interrupt handler)."""
        try:
            report = traceback.TracebackException(type(exc), exc, exc.__traceback__)
            _drop_kernel_frames(report, set())
            return "".join(report.format()).rstrip("\n")
        except Exception:
            return _short_error(exc)

    def _bounded_repr(self, value, limit=None):
        limit = limit or self.sink.limit
        text = repr(value)
        if len(text) > limit:
            text = text[:limit] + f"... [perennial: repr truncated, {len(text) - limit} more characters]"
        return text

    def make_show(self):
        """A replacement for ``matplotlib.pyplot.show`` that emits the open figures. A plain
        function, because pyplot sets attributes on its ``show``."""

        def show(*args, **kwargs):
            self._capture_figures()

        return show

    def _capture_figures(self):
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        nums = plt.get_fignums()
        for num in nums:
            buf = io.BytesIO()
            plt.figure(num).savefig(buf, format="png", dpi=100, bbox_inches="tight")
            self.images.append(base64.b64encode(buf.getvalue()).decode("ascii"))
        if nums:
            plt.close("all")

    # -- reset ------------------------------------------------------------------------------------

    def reset(self):
        """A fresh namespace in the same machine: every name the cells made goes (files and
        installed packages stay), and modules imported from the machine's own folder are
        forgotten, so that their next import reads them again. Returns how many names went."""
        names = [n for n in self.ns if not (n.startswith("__") and n.endswith("__"))]
        self.ns.clear()
        self.ns.update({"__name__": "__main__", "__doc__": None, "__builtins__": builtins})
        self.future_flags = 0
        self.images = []
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            plt.close("all")
        own = os.path.realpath(os.getcwd()) + os.sep
        for name, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and os.path.realpath(path).startswith(own) and "site-packages" not in path:
                del sys.modules[name]
        importlib.invalidate_caches()
        return {"cleared": len(names)}

    # -- introspection ---------------------------------------------------------------------------

    def variables(self):
        short = reprlib.Repr()
        short.maxstring = short.maxother = VARIABLE_REPR_CHARS
        short.maxlist = short.maxtuple = short.maxdict = short.maxset = 20
        out = []
        for name, value in list(self.ns.items()):
            if name.startswith("__") or name == "_" or isinstance(value, (types.ModuleType, _FutureFeature)):
                continue
            entry = {"name": name, "type": _type_name(value)}
            try:
                text = short.repr(value)
            except Exception as exc:
                text = f"<repr failed: {_short_error(exc)}>"
            entry["repr"] = text[:VARIABLE_REPR_CHARS]
            size = _size_of(value)
            if size is not None:
                entry["size"] = size
            shape = getattr(value, "shape", None) if not isinstance(value, type) else None
            if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
                entry["shape"] = list(shape)
            out.append(entry)
        return out

    def variable(self, name):
        if name not in self.ns:
            raise KeyError(f"no variable named {name!r}")
        value = self.ns[name]
        size = _size_of(value)
        if isinstance(value, (list, tuple, dict, set, frozenset)) and (size or 0) <= 10_000:
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

    def complete(self, code, cursor):
        """What the name or dotted path before ``cursor`` can become, as rlcompleter sees it
        (callables end in "("), and where that name starts. Only names are looked up: nothing
        is called but what attribute access itself runs."""
        token = _COMPLETION_TOKEN.search(code[:cursor]).group()
        completer = rlcompleter.Completer(self.ns)
        matches = []
        for state in range(500 if token else 0):
            match = completer.complete(token, state)
            if match is None:
                break
            if match not in matches:
                matches.append(match)
        return {"matches": matches, "start": cursor - len(token)}

    def inspect(self, expr):
        value = self._resolve(expr)
        try:
            signature = str(inspect.signature(value))
        except (TypeError, ValueError):
            signature = None
        return {
            "name": expr,
            "type": _type_name(value),
            "signature": signature,
            "doc": inspect.getdoc(value),
        }

    # -- files ------------------------------------------------------------------------------------

    def list_files(self, path):
        """A folder's entries (the working directory when `path` is empty)."""
        folder = os.path.abspath(path or ".")
        entries = []
        with os.scandir(folder) as scan:
            for entry in scan:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                kind = "link" if entry.is_symlink() else "dir" if entry.is_dir(follow_symlinks=False) else "file"
                entries.append({"name": entry.name, "type": kind, "size": info.st_size, "mtime": info.st_mtime})
        entries.sort(key=lambda e: (e["type"] != "dir", e["name"]))
        return {"path": folder, "entries": entries}

    def read_file(self, path, limit):
        """A file's bytes (base64), at most `limit` of them."""
        with open(path, "rb") as f:
            data = f.read(limit + 1)
            size = os.fstat(f.fileno()).st_size
        if len(data) > limit:
            raise ValueError(f"{path} is {size} bytes, more than the {limit} that can be read at once")
        return {"path": os.path.abspath(path), "size": size, "content": base64.b64encode(data).decode("ascii")}

    def write_file(self, path, content):
        """Writes base64 `content` to `path`, making its folders."""
        data = base64.b64decode(content, validate=True)
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return {"path": os.path.abspath(path), "size": len(data)}

    def is_complete(self, code):
        """Like the interactive prompt: "incomplete" asks for another line."""
        import codeop

        try:
            compiled = codeop.compile_command(code, "<input>", "single")
        except (SyntaxError, ValueError, OverflowError):
            return "invalid"
        return "incomplete" if compiled is None else "complete"

    def _resolve(self, expr):
        """Looks up a dotted name without calling anything."""
        parts = expr.strip().split(".")
        if not all(p.isidentifier() for p in parts):
            raise ValueError(f"not a dotted name: {expr!r}")
        head = parts[0]
        if head in self.ns:
            value = self.ns[head]
        elif hasattr(builtins, head):
            value = getattr(builtins, head)
        else:
            raise NameError(f"name {head!r} is not defined")
        for part in parts[1:]:
            value = inspect.getattr_static(value, part)
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
        return value

    # -- swap ------------------------------------------------------------------------------------

    def snapshot(self, path):
        """Saves the namespace to ``path``; returns what it could not keep."""
        names = [n for n in self.ns if not (n.startswith("__") and n.endswith("__"))]
        modules = {n: self.ns[n].__name__ for n in names if isinstance(self.ns[n], types.ModuleType)}
        values = _save_order(self.ns, [n for n in names if n not in modules])
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(SNAPSHOT_MAGIC)
            try:
                segments, failed = _write_segments(f, [(n, self.ns[n]) for n in values] + [("\0rng", _rng_state())])
            except _WriteFailed as failure:
                raise failure.args[0] from None
            finally:
                # The cells' syntax trees served this snapshot; kept, they would fill the machine's memory.
                _parse_cell.cache_clear()
            lost = [{"name": _display_name(n), "reason": r} for n, r in failed.items()]
            footer = json.dumps(
                {
                    "python": sys.version,
                    "cache_tag": sys.implementation.cache_tag,
                    "modules": modules,
                    "segments": segments,
                    "cells": self.cells,
                    "cwd": os.getcwd(),
                    "workdir": self.workdir,
                    "sys_path": sys.path,
                    "future_flags": self.future_flags,
                    "lost": lost,
                }
            ).encode("utf-8")
            f.write(footer)
            f.write(len(footer).to_bytes(8, "little"))
            f.write(SNAPSHOT_MAGIC)
            f.flush()
            os.fsync(f.fileno())
            size = f.tell()
        return {"bytes": size, "lost": lost, "saved": len(names) - len(lost)}

    def restore(self, path, transfer=False):
        """Loads a snapshot written by ``snapshot``; returns what could not be brought back, which
        the next result also reports, unless this is a ``transfer``: then the file is removed
        once read, and the caller reports the losses."""
        with open(path, "rb") as f:
            blob = f.read()
        if transfer:
            os.unlink(path)
        if not (blob.startswith(SNAPSHOT_MAGIC) and blob.endswith(SNAPSHOT_MAGIC)):
            newer = re.match(rb"PERENNIAL-PY-SNAPSHOT-(\d+)\n", blob)
            if newer and int(newer.group(1)) > 1:
                raise NewerSnapshotError(f"the snapshot was written by a newer Perennial in format {int(newer.group(1))}, and this one reads format 1")
            raise ValueError("not a Perennial python snapshot (bad magic)")
        end = len(blob) - len(SNAPSHOT_MAGIC)
        footer_len = int.from_bytes(blob[end - 8 : end], "little")
        meta = json.loads(blob[end - 8 - footer_len : end - 8])
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
                lost.append({"name": name, "reason": f"import {module_name} failed: {_short_error(exc)}"})
        global _RESTORING_TAG
        # Functions saved by another Python are compiled again from their source (see _rebuild_function).
        _RESTORING_TAG = meta.get("cache_tag")
        try:
            loaded = _load_segments(blob, meta.get("segments", []), lost)
        finally:
            _RESTORING_TAG = None
        for name, value in loaded:
            if name == "\0rng":
                _set_rng_state(value)
            else:
                self.ns[name] = value
        if not transfer:
            self.lost = lost
        return {"lost": lost}


def _drop_kernel_frames(report, seen):
    if report is None or id(report) in seen:
        return
    seen.add(id(report))
    kept = [frame for frame in report.stack if frame.filename != __file__]
    report.stack = traceback.StackSummary.from_list(kept)
    _drop_kernel_frames(report.__cause__, seen)
    _drop_kernel_frames(report.__context__, seen)


def _display_name(name):
    return "random state" if name == "\0rng" else name


def _rng_state():
    state = {}
    if "random" in sys.modules:
        state["random"] = sys.modules["random"].getstate()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        try:
            state["numpy"] = numpy_random.get_state()
        except Exception:
            pass
    return state


def _set_rng_state(state):
    if "random" in state:
        importlib.import_module("random").setstate(state["random"])
    if "numpy" in state:
        importlib.import_module("numpy.random").set_state(state["numpy"])


def _resume(steps, sent, thrown):
    """Advances a cell's steps with the last awaitable's outcome: answers the next awaitable, or
    (None, the cell's result) when the cell is done."""
    try:
        return (steps.throw(thrown) if thrown is not None else steps.send(sent)), None
    except StopIteration as finished:
        return None, finished.value


def _ends_with_semicolon(code, node):
    """True when the text after the last expression is a ``;`` (the REPL's "no value")."""
    lines = code.splitlines()
    if node.end_lineno is None or node.end_lineno > len(lines):
        return False
    rest = lines[node.end_lineno - 1].encode("utf-8")[node.end_col_offset :].decode("utf-8", "ignore")
    rest = "".join([rest] + lines[node.end_lineno :])
    for char in rest:
        if char.isspace():
            continue
        return char == ";"
    return False


def _repr_png(value):
    method = getattr(type(value), "_repr_png_", None)
    if method is None:
        return None
    try:
        png = method(value)
    except Exception:
        return None
    if isinstance(png, (bytes, bytearray)):
        return base64.b64encode(png).decode("ascii")
    return png if isinstance(png, str) else None


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


class _PyplotHook:
    """Patches ``pyplot.show`` the moment pyplot is imported, so each ``show()`` in a cell
    emits its figures in order."""

    def __init__(self, kernel):
        self._kernel = kernel

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "matplotlib.pyplot":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        loader, kernel = spec.loader, self._kernel
        original = loader.exec_module

        def exec_module(module):
            original(module)
            module.show = kernel.make_show()
            sys.meta_path.remove(self)

        loader.exec_module = exec_module
        return spec


def _install_pyplot_hook(kernel):
    import importlib.util  # noqa: F401 - used by the hook

    # An earlier kernel's hook, when this one takes over from it.
    sys.meta_path[:] = [finder for finder in sys.meta_path if type(finder).__name__ != "_PyplotHook"]
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.show = kernel.make_show()
    else:
        sys.meta_path.insert(0, _PyplotHook(kernel))


# -- CPython driver ------------------------------------------------------------------------------


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
        data = (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
            "utf-8", "surrogatepass"
        )
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


def _command_handlers(kernel):
    """The commands both drivers take, by name; each gets the decoded message."""
    return {
        "run": lambda m: kernel.run(m["code"], m.get("cell", 0)),
        "variables": lambda m: kernel.variables(),
        "variable": lambda m: kernel.variable(m["name"]),
        "complete": lambda m: kernel.complete(m["code"], m["cursor"]),
        "inspect": lambda m: kernel.inspect(m["expr"]),
        "is_complete": lambda m: kernel.is_complete(m["code"]),
        "reset": lambda m: kernel.reset(),
        "refresh_imports": lambda m: importlib.invalidate_caches(),
        "list_files": lambda m: kernel.list_files(m.get("path", "")),
        "read_file": lambda m: kernel.read_file(m["path"], int(m["limit"])),
        "write_file": lambda m: kernel.write_file(m["path"], m["content"]),
        "ping": lambda m: {"python": sys.version.split()[0], "platform": sys.platform},
        # The namespace pickled to a file and back: the python engine's swap, and a sandbox
        # machine's move to another Pyodide build (a transfer: the file goes, the losses are answered).
        "snapshot": lambda m: kernel.snapshot(m["path"]),
        "restore": lambda m: kernel.restore(m["path"], transfer=bool(m.get("transfer"))),
    }


def _raise_interrupt_at_next_line(frame):
    """Raises KeyboardInterrupt at the next line that ``frame`` or a frame below it runs (or a
    function any of them calls), through a trace function that then gives tracing back."""
    previous = sys.gettrace()
    frames = []

    def tracer(traced, event, arg):
        sys.settrace(previous)
        for each in frames:
            each.f_trace = None
        raise KeyboardInterrupt

    while frame is not None:
        frame.f_trace = tracer
        frames.append(frame)
        frame = frame.f_back
    sys.settrace(tracer)


def _install_interrupt_handler(kernel, channel=None):
    """KeyboardInterrupt only while user code runs; an interrupt that arrives while the kernel
    writes a message is held until the message is whole."""

    def on_sigint(signum, frame):
        if not kernel.running:
            return
        if channel is not None and channel.critical:
            channel.interrupt_pending = True
            return
        raise KeyboardInterrupt

    def on_unraisable(unraisable):
        # An interrupt that landed where Python cannot raise (a weakref callback the garbage
        # collector runs) would be printed as "Exception ignored" and lost.
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            sys.__unraisablehook__(unraisable)
        elif kernel.running:
            _raise_interrupt_at_next_line(sys._getframe(1))

    signal.signal(signal.SIGINT, on_sigint)
    sys.unraisablehook = on_unraisable


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

    limit = int(os.environ.pop("PERENNIAL_OUTPUT_LIMIT", DEFAULT_OUTPUT_LIMIT))
    kernel = current["kernel"] = Kernel(send_output, limit, fds=(1, 2))

    _install_interrupt_handler(kernel, channel)
    _set_memory_limit(os.environ.pop("PERENNIAL_MEMORY_MB", None))

    def flusher():
        # Partial lines reach the host soon even while the cell blocks.
        while True:
            kernel.sink.wake.wait()
            kernel.sink.wake.clear()
            time.sleep(0.02)
            kernel.sink.flush()

    threading.Thread(target=flusher, name="perennial-flusher", daemon=True).start()
    handlers = _command_handlers(kernel)
    workdir = os.environ.pop("PERENNIAL_WORKDIR", None)
    commands = os.fdopen(3, "rb")
    channel.send({"ev": "ready", "pid": os.getpid(), "python": sys.version.split()[0]})
    for line in commands:
        try:
            message = json.loads(line)
            current["id"] = message.get("id")
            if workdir:
                # Entered at the first command, not at start: the host may have put another
                # folder in its place meanwhile (a rollback). No command runs anywhere else.
                os.chdir(workdir)
                kernel.workdir = os.getcwd()
                workdir = None
            handler = handlers[message["op"]]
            reply = {"ev": "reply", "id": current["id"], "ok": True, "result": handler(message)}
        except BaseException as exc:  # noqa: BLE001 - the driver must outlive anything a command does
            reply = {"ev": "reply", "id": current.get("id"), "ok": False, "error": _short_error(exc)}
        try:
            channel.send(reply)
        except (TypeError, ValueError) as exc:
            channel.send({"ev": "reply", "id": current["id"], "ok": False, "error": _short_error(exc)})
        current["id"] = None
        channel.interrupt_pending = False


# -- Pyodide driver ------------------------------------------------------------------------------

_DRIVER = None


class EmscriptenDriver:
    """Drives the kernel inside Pyodide for the sandbox engine. Output leaves through fds 1 and 2,
    whose handlers the sandbox process sets, so Python holds no JS object and the machine's memory
    can always be snapshotted."""

    def __init__(self, kernel, adopt=None):
        """``adopt``: the driver of an earlier kernel that ``kernel`` took over."""
        self.kernel = kernel
        self.handlers = _command_handlers(self.kernel)
        self.handlers["configure"] = self._configure
        self.installable = getattr(adopt, "installable", frozenset())
        self.installable_id = getattr(adopt, "installable_id", None)
        self.snapshot_lost = list(getattr(adopt, "snapshot_lost", []))
        # Each write leaves at once; the sandbox process gathers them before they cross to the host.
        self.kernel.sink.coalesce = False
        _install_interrupt_handler(self.kernel)
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
        except BaseException as exc:  # noqa: BLE001 - report everything to the host
            return json.dumps({"ok": False, "error": _short_error(exc)})

    def _missing_imports(self, code):
        """Modules the cell imports that are not installed but that the package index has."""
        if not self.installable:
            return []
        try:
            from pyodide.code import find_imports

            names = find_imports(code)
        except Exception:
            return []  # the kernel reports the syntax error
        import importlib.util

        return [n for n in names if n in self.installable and n not in sys.modules and importlib.util.find_spec(n) is None]

    async def _run(self, args):
        missing = self._missing_imports(args["code"])
        if missing:
            # Nothing ran: the host installs them and sends the cell again.
            return json.dumps({"ok": True, "result": {"needPackages": missing}})
        try:
            result = await self.kernel.run_async(args["code"], args.get("cell", 0))
            return json.dumps({"ok": True, "result": result})
        except BaseException as exc:  # noqa: BLE001 - report everything to the host
            return json.dumps({"ok": False, "error": _short_error(exc)})

    def prepare_snapshot(self):
        """Names what a memory snapshot cannot carry: open files and sockets (their descriptors
        live in JavaScript) and pending asyncio tasks (their timers do). The list is kept in
        memory, so the restored machine reports and drops them."""
        import asyncio
        import gc

        # A snapshot cannot carry JS objects that Python holds. Garbage may still hold some:
        # cycles (exceptions and their frames) until a collection, and proxies Pyodide frees
        # lazily, at the next call into JavaScript — so make one.
        gc.collect()
        js = sys.modules.get("js")
        if js is not None:
            js.Object.keys(js.Object.new())
        lost = []
        for name, value in list(self.kernel.ns.items()):
            reason = None if name.startswith("__") else _descriptor_bound(value)
            if reason:
                lost.append({"name": name, "reason": reason})
        for task in asyncio.all_tasks(asyncio.get_event_loop()):
            lost.append({"name": f"asyncio task {task.get_name()}", "reason": "a pending task stops at a swap"})
        self.snapshot_lost = lost
        return json.dumps(lost)

    def after_snapshot(self):
        self.snapshot_lost = []

    def after_restore(self):
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


def _descriptor_bound(value):
    """Why an open file or socket cannot cross a swap, or None. An open file is flushed first, so
    that what the code wrote to it is on disk (and, in a sandbox, in the archive of its files)."""
    if isinstance(value, io.IOBase) and not isinstance(value, _NOT_DESCRIPTORS) and not value.closed:
        try:
            value.flush()
        except Exception:
            pass
        return f"open file {getattr(value, 'name', '')!r}: its descriptor does not survive a swap"
    socket = sys.modules.get("socket")
    if socket is not None and isinstance(value, socket.socket) and value.fileno() != -1:
        return "open socket: connections do not survive a swap"
    return None


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


def start_emscripten(output_limit=DEFAULT_OUTPUT_LIMIT):
    """Called once by the sandbox process when it boots a fresh machine."""
    global _DRIVER
    _DRIVER = EmscriptenDriver(Kernel(EmscriptenDriver._send, output_limit, fds=(1, 2)))
    return _DRIVER


def adopt_emscripten(earlier):
    """Called by the sandbox process when it restores a machine whose kernel (the module
    ``earlier``) an earlier build made: this kernel takes over that one's state in the same
    interpreter, so the machine answers today's commands with everything it held."""
    global _DRIVER
    driver = earlier._DRIVER
    kernel = Kernel(EmscriptenDriver._send, driver.kernel.sink.limit, fds=(1, 2), adopt=driver.kernel)
    # Builds before 0.2.0 bound the kernel module in the user's namespace.
    if kernel.ns.get("perennial_kernel") is earlier:
        del kernel.ns["perennial_kernel"]
    _DRIVER = EmscriptenDriver(kernel, adopt=driver)
    return _DRIVER
