"""The python snapshot's file format, and reading it back when a variable fails.

A file is the magic, one pickle segment per variable (all of one memo, so an object in two
variables is saved once and comes back shared), a JSON footer naming the segments and the rest of
the kernel's state, the footer's length, and the magic again. A variable that cannot be saved or
loaded is reported as lost and never takes another with it.
"""

import importlib
import io
import json
import mmap
import os
import pickle
import pickletools
import re

from .output import short_error
from .pickling import NamespacePickler, fallback_picklers, reduce_process_bound
from .reducers import _Unsaveable

SNAPSHOT_MAGIC = b"PERENNIAL-PY-SNAPSHOT-1\n"
# The segment of the process's state (``process_state``), which is not a variable. Its name is from
# when it held only the random generators' states.
PROCESS_SEGMENT = "\0rng"


class NewerSnapshotError(ValueError):
    """A snapshot in a format a newer Perennial wrote: sound, only not for this build."""


class _WriteFailed(BaseException):
    """A write to the snapshot file failed (a full disk): not an Exception, so that no value is
    taken for unsaveable because of it; the whole snapshot fails instead."""


def display_name(name):
    return "the process's state (random generators, settings)" if name == PROCESS_SEGMENT else name


def write(path, items, meta):
    """Writes ``items`` (name, value) and the footer ``meta`` to ``path``, synced. Returns the
    file's size, what could not be saved ([{name, reason}], also in the footer as ``lost``, which
    also names what is saved as a copy of memory it shared) and how many variables were saved."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(SNAPSHOT_MAGIC)
        try:
            segments, failed, copied = _write_segments(f, items)
        except _WriteFailed as failure:
            raise failure.args[0] from None
        lost = [{"name": display_name(n), "reason": r} for n, r in {**failed, **copied}.items()]
        footer = json.dumps({**meta, "segments": segments, "lost": lost}).encode("utf-8")
        f.write(footer)
        f.write(len(footer).to_bytes(8, "little"))
        f.write(SNAPSHOT_MAGIC)
        f.flush()
        os.fsync(f.fileno())
        return f.tell(), lost, sum(1 for segment in segments if segment[0] != PROCESS_SEGMENT)


def read(path, transfer=False):
    """The file, mapped read-only, and its footer; a ``transfer``'s file is removed once mapped.
    Mapped, not read: the file's pages are the page cache's, so a machine whose variables fill
    most of its memory cap still has room to load them back. Close the map once loaded."""
    with open(path, "rb") as f:
        try:
            blob = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # an empty file, or a file system without maps
            blob = f.read()
    if transfer:
        os.unlink(path)
    magic = len(SNAPSHOT_MAGIC)
    if not (blob[:magic] == SNAPSHOT_MAGIC and blob[-magic:] == SNAPSHOT_MAGIC and len(blob) > 2 * magic):
        newer = re.match(rb"PERENNIAL-PY-SNAPSHOT-(\d+)\n", blob[:64])
        _close(blob)
        if newer and int(newer.group(1)) > 1:
            raise NewerSnapshotError(
                f"the snapshot was written by a newer Perennial in format {int(newer.group(1))}, and this one reads format 1"
            )
        raise ValueError("not a Perennial python snapshot (bad magic)")
    end = len(blob) - magic
    footer_len = int.from_bytes(blob[end - 8 : end], "little")
    return blob, json.loads(blob[end - 8 - footer_len : end - 8])


class _MapReader(io.RawIOBase):
    """The map as a file the unpickler reads into its objects' memory directly (``readinto``): a
    large array or bytes is copied once, from the page cache, never held twice."""

    def __init__(self, mapped):
        self._map = mapped
        self._pos = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, pos, whence=io.SEEK_SET):
        self._pos = (
            pos if whence == io.SEEK_SET else (self._pos + pos if whence == io.SEEK_CUR else len(self._map) + pos)
        )
        return self._pos

    def tell(self):
        return self._pos

    def readinto(self, buffer):
        with memoryview(self._map) as view, memoryview(buffer) as target:
            count = max(0, min(len(target), len(view) - self._pos))
            target[:count] = view[self._pos : self._pos + count]
        self._pos += count
        return count


def _close(blob):
    if isinstance(blob, mmap.mmap):
        blob.close()


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
    """Writes each (name, value) as a pickle segment, of one memo. A value that fails restarts the
    stream without it (the memo would name objects whose bytes were thrown away); what the
    namespace pickler cannot save is then tried alone with dill or cloudpickle. Returns
    (segments, {name: why it was not saved}, {name: why it was saved as a copy})."""
    failed = {}
    for name, value in items:
        try:
            reduce_process_bound(value)
        except _Unsaveable as exc:
            failed[name] = exc
    start_of_stream = f.tell()
    namespace_ids = frozenset(id(value) for _, value in items)
    culprit = True
    while culprit:
        f.seek(start_of_stream)
        f.truncate()
        pickler = NamespacePickler(_SnapshotFile(f), namespace_ids, protocol=pickle.HIGHEST_PROTOCOL)
        segments, culprit, copied = [], None, {}
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
            if pickler.copies:
                copied[name] = "; ".join(dict.fromkeys(pickler.copies))
                pickler.copies.clear()
    values = dict(items)
    for name, error in list(failed.items()):
        if not isinstance(error, _Unsaveable) and _write_with_fallback(f, name, values[name], segments):
            del failed[name]
    return (
        segments,
        {name: str(e) if isinstance(e, _Unsaveable) else short_error(e) for name, e in failed.items()},
        copied,
    )


def _write_with_fallback(f, name, value, segments):
    start = f.tell()
    for label, pickler_class in fallback_picklers():
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


def load_segments(blob, segments, lost, place, within=lambda load: load()):
    """Loads the segments of ``blob`` (as ``read`` gives it) in order, giving each that loads to
    ``place(name, value)`` at once, so that a later one can find it (a statsmodels formula names a
    REPL function, which is saved first); adds the others to ``lost``, and closes ``blob``. Each
    load runs ``within(load)``: a frame of the user's namespace, where code that looks up the
    frames it is loaded from (statsmodels evaluates a formula there) finds the user's names. One C
    unpickler reads the segments of the shared memo in turn. After a failure it cannot go on: it
    keeps stale read-ahead, and its memo lacks what the failed segment would have made, which
    shifts every later index. So then the whole snapshot is read again by the mended path."""
    try:
        # The map itself is the unpickler's file: a segment is read a piece at a time, not copied whole.
        stream = _MapReader(blob) if isinstance(blob, mmap.mmap) else io.BytesIO(blob)
        unpickler = pickle.Unpickler(stream)
        lost_alone = []
        for name, start, stop, label in segments:
            if label != "pickle":
                _load_alone(blob[start:stop], name, label, place, lost_alone, within)
                continue
            try:
                stream.seek(start)
                value = within(unpickler.load)
            except BaseException:
                return _load_segments_mended(blob, segments, lost, place, within)
            place(name, value)
        lost.extend(lost_alone)
    finally:
        _close(blob)


def _load_alone(data, name, label, place, lost, within):
    try:
        value = within(lambda: importlib.import_module(label).loads(data))
    except BaseException as exc:
        lost.append({"name": display_name(name), "reason": short_error(exc)})
        return
    place(name, value)


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


def _load_segments_mended(blob, segments, lost, place, within):
    """Reads each segment with a fresh pure-Python unpickler over one memo dict, mended after a
    failure: each index the failed segment would have made (its MEMOIZE opcodes) gets what the
    pickle states outright there (``_stated_memo``), or else a mark, so that a later segment that
    refers to a marked one fails and says why, and the others get the right objects."""
    memo = _MendedMemo()
    for name, start, stop, label in segments:
        data = blob[start:stop]
        if label != "pickle":
            _load_alone(data, name, label, place, lost, within)
            continue
        made_before = len(memo)
        try:
            unpickler = pickle._Unpickler(io.BytesIO(data))
            unpickler.memo = memo
            value = within(unpickler.load)
        except BaseException as exc:
            lost.append({"name": display_name(name), "reason": short_error(exc)})
            dict.update(memo, _stated_memo(data, memo, made_before, _LostEntry(display_name(name))))
            continue
        place(name, value)


# Opcodes that push a value given in the pickle itself.
_STATED = {
    "SHORT_BINUNICODE",
    "BINUNICODE",
    "BINUNICODE8",
    "UNICODE",
    "SHORT_BINSTRING",
    "BINSTRING",
    "STRING",
    "SHORT_BINBYTES",
    "BINBYTES",
    "BINBYTES8",
    "INT",
    "BININT",
    "BININT1",
    "BININT2",
    "LONG",
    "LONG1",
    "LONG4",
    "FLOAT",
    "BINFLOAT",
}
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
        del stack[len(stack) - min(pops, len(stack)) :]
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
