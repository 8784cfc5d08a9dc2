"""numpy arrays that share memory, saved so that they share it again after a swap.

Pickle copies a view's data: a view and its base saved apart come back as two unrelated arrays,
and a write through one no longer shows in the other. Here a view is saved as (its base, where it
starts in the base's memory, its shape, strides and dtype), the base through the pickle's memo, so
every view of one base (in any variable, or inside a pandas object) comes back on one buffer. A
memory-mapped array comes back mapped to its file. Where the memory belongs to something that
cannot be saved, the view comes back as a copy and the snapshot says so.
"""

import os
import sys


def _address(array):
    return array.__array_interface__["data"][0]


class _ViewBase:
    """What a rebuilt view hangs on: the array interface of its memory, and the base that owns it
    (so that the next snapshot finds the base again)."""

    def __init__(self, interface, base):
        self.__array_interface__ = interface
        self.base = base


def _view_of(base, offset, shape, strides, dtype, writeable):
    """The array at ``offset`` bytes into ``base``'s memory, with this shape, strides and dtype."""
    import numpy

    if not isinstance(base, numpy.ndarray):
        base = numpy.frombuffer(base, dtype=numpy.uint8)
    interface = {
        "version": 3,
        "data": (_address(base) + offset, not writeable),
        "shape": tuple(shape),
        "strides": tuple(strides),
        "typestr": dtype.str,
        "descr": dtype.descr,
    }
    view = numpy.asarray(_ViewBase(interface, base))
    if view.dtype != dtype:  # what the interface cannot say: field offsets, alignment
        view = view.view(dtype)
    if not writeable:
        view.flags.writeable = False
    return view


def _portable_path(filename):
    """A mapped file under the working directory, by its path from there: a restore enters the
    same directory wherever the machine is now (a moved data dir, a fork's own copy of its files)."""
    cwd = os.getcwd()
    if os.path.commonpath([cwd, os.path.abspath(filename)]) == cwd:
        return os.path.relpath(filename, cwd)
    return filename


def _map_file(filename, dtype, mode, offset, shape, order):
    import numpy

    return numpy.memmap(filename, dtype=dtype, mode=mode, offset=offset, shape=shape, order=order)


def _owner(array, numpy):
    """The first array in ``array``'s chain of bases whose memory is not another array's (itself,
    when it has no base array), seen through the bases numpy and rebuilt views put between; and
    what that memory belongs to (None: the array itself)."""
    while True:
        base = array.base
        if isinstance(base, _ViewBase):
            base = base.base
        if not isinstance(base, numpy.ndarray):
            # numpy.frombuffer(bytearray) hangs on a memoryview of it
            return array, base.obj if isinstance(base, memoryview) else base
        array = base


def _mapped_file(array, numpy):
    # Copy-on-write ("c") memory is the process's own: it is saved as a copy.
    return type(array) is numpy.memmap and array.filename and array.mode in ("r", "r+", "w+")


def _buffer_types():
    import array

    return (bytes, bytearray, array.array)


# numpy's NPY_ARRAY_WRITEABLE bit of ``ndarray.flags.num``.
_WRITEABLE = 0x0400


def _writeable(obj):
    """Whether ``obj`` can be written. Read from the flag bits: ``flags.writeable`` of what
    ``broadcast_arrays`` made warns (a FutureWarning, numpy 1.17 to 1.x) to whoever reads it."""
    return bool(obj.flags.num & _WRITEABLE)


def reduce_array(obj, namespace_ids, copies):
    """A reduction that keeps ``obj``'s memory shared, or NotImplemented (numpy's own pickling,
    a copy). Memory that a snapshot cannot keep (another library's buffer) is saved as a copy,
    which views of it share; ``copies`` gets why when what owned it is itself a variable, whose
    sharing a person could see."""
    numpy = sys.modules.get("numpy")
    if numpy is None or type(obj) not in (numpy.ndarray, numpy.memmap) or obj.base is None or obj.size == 0:
        return NotImplemented
    owner, memory = _owner(obj, numpy)
    kept = memory is None or _mapped_file(owner, numpy) or isinstance(memory, _buffer_types())
    if not kept and id(memory) in namespace_ids:
        copies.append(
            f"it comes back as a copy, no longer sharing memory with a {type(memory).__name__}, which a snapshot cannot keep"
        )
    if owner is not obj:
        return _view_of, (owner, _address(obj) - _address(owner), obj.shape, obj.strides, obj.dtype, _writeable(obj))
    if _mapped_file(obj, numpy):
        mode = "r+" if obj.mode == "w+" else obj.mode  # w+ made the file: mapping it again must not empty it
        order = "F" if obj.flags.f_contiguous and not obj.flags.c_contiguous else "C"
        return _map_file, (_portable_path(obj.filename), obj.dtype, mode, obj.offset, obj.shape, order)
    if kept and memory is not None:
        start = _address(numpy.frombuffer(memory, dtype=numpy.uint8))
        return _view_of, (memory, _address(obj) - start, obj.shape, obj.strides, obj.dtype, _writeable(obj))
    return NotImplemented
