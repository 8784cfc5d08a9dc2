"""The namespace pickler, and what belongs to the running process.

``NamespacePickler`` is the C pickler, taught to save REPL functions and classes by value
(``reducers``), modules by name, and the dataclasses sentinels by reference. What belongs to the
process is saved where it can be rebuilt as it was (a lock, a closed file, the kernel's streams)
and refused, saying why, where it cannot; dill or cloudpickle, when installed, are tried one
variable at a time for the rest, held to the same rules.
"""

import copyreg
import importlib
import io
import os
import pickle
import sys
import threading
import types

from .arrays import reduce_array
from .output import StreamWriter, stream_name
from .reducers import _Unsaveable, reduce_class, reduce_function

_LOCK_TYPE = type(threading.Lock())
_RLOCK_TYPE = type(threading.RLock())
_SUSPENDED_TYPES = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)

# Streams that are not the operating system's: in-memory buffers and the kernel's stdout/stderr.
_NOT_DESCRIPTORS = (io.BytesIO, io.StringIO, StreamWriter)


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


def _make_mappingproxy(mapping):
    return types.MappingProxyType(mapping)


def reduce_process_bound(obj):
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
        raise _Unsaveable(
            f"a paused {type(obj).__name__} cannot be pickled (only a sandbox machine's memory snapshot keeps one)"
        )
    if isinstance(obj, StreamWriter):
        return getattr, (sys, stream_name(obj))
    if (
        isinstance(obj, (io.FileIO, io.BufferedIOBase, io.TextIOWrapper))
        and not isinstance(obj, _NOT_DESCRIPTORS)
        and obj.closed
    ):
        return _make_closed_file, (obj.name, obj.mode, isinstance(obj, io.FileIO))
    reason = descriptor_bound(obj)
    if reason:
        raise _Unsaveable(reason)
    return NotImplemented


def descriptor_bound(value):
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


class NamespacePickler(pickle.Pickler):
    """The C pickler, taught to save what the REPL defines: functions and classes of the
    namespace by value, modules by name, the dataclasses sentinels by reference, and numpy views
    as views of their base (``arrays``). ``namespace_ids``: the ids of the variables' values;
    ``copies`` collects why a value came to be saved as a copy of memory it shared."""

    def __init__(self, file, namespace_ids=frozenset(), **options):
        super().__init__(file, **options)
        self.namespace_ids = namespace_ids
        self.copies = []

    def reducer_override(self, obj):
        bound = reduce_process_bound(obj)
        if bound is not NotImplemented:
            return bound
        shared = reduce_array(obj, self.namespace_ids, self.copies)
        if shared is not NotImplemented:
            return shared
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if isinstance(obj, types.FunctionType) and obj.__module__ == "__main__":
            return reduce_function(obj)
        if isinstance(obj, type) and obj.__module__ == "__main__":
            return reduce_class(obj)
        if isinstance(obj, property):
            return property, (obj.fget, obj.fset, obj.fdel, obj.__doc__)
        if isinstance(obj, (staticmethod, classmethod)):
            return type(obj), (obj.__func__,)
        if isinstance(obj, types.MappingProxyType):  # e.g. dataclass field metadata
            return _make_mappingproxy, (dict(obj),)
        sentinel = _dataclass_sentinel(obj)
        if sentinel is not None:
            return getattr, (sys.modules["dataclasses"], sentinel)
        return _reduce_refused(obj)


def _reduce_refused(obj):
    """An instance whose class refuses pickling for now (its ``__getstate__`` raises
    NotImplementedError, as patsy's do: "pickling not yet supported") is saved by its
    ``__dict__``. A swap reads it back with the same library, which is what such a refusal leaves
    open; a refusal for any other reason (TypeError: a handle, a lock) stands."""
    getstate = getattr(type(obj), "__getstate__", None)
    if not isinstance(getstate, types.FunctionType) or not isinstance(getattr(obj, "__dict__", None), dict):
        return NotImplemented
    try:
        getstate(obj)
    except NotImplementedError:
        return copyreg.__newobj__, (type(obj),), dict(obj.__dict__), None, None, _set_instance_dict
    except Exception:
        pass
    return NotImplemented


def _set_instance_dict(obj, state):
    obj.__dict__.update(state)


def _dataclass_sentinel(obj):
    """The name of the dataclasses sentinel ``obj`` is, if it is one. Only where something
    imported dataclasses can there be one: the kernel does not import it to start."""
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is None:
        return None
    for name in ("MISSING", "KW_ONLY", "_HAS_DEFAULT_FACTORY", "_FIELD", "_FIELD_CLASSVAR", "_FIELD_INITVAR"):
        if getattr(dataclasses, name, None) is obj:
            return name
    return None


def fallback_picklers():
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
            bound = reduce_process_bound(obj)
            if bound is not NotImplemented:
                return bound
            parent = getattr(super(), "reducer_override", None)
            return parent(obj) if parent else NotImplemented

    return Guarded


def save_order(ns, names):
    """REPL classes, then REPL functions, then the rest: what others refer to is saved first, so an
    instance that fails to save or load never takes its class with it."""

    def rank(name):
        value = ns[name]
        main = getattr(value, "__module__", None) == "__main__"
        if isinstance(value, type) and main:
            return 0
        return 1 if isinstance(value, types.FunctionType) and main else 2

    return sorted(names, key=rank)
