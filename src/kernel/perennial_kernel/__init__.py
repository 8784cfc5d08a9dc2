"""Perennial's kernel: runs REPL cells in one persistent namespace, for both engines.

One module per concern:

- ``output``: a cell's stdout and stderr, capped, on their way to the host.
- ``reducers``: what the REPL defines, saved by value (functions with their source, classes).
- ``pickling``: the namespace pickler, and what belongs to the running process.
- ``arrays``: numpy arrays that share memory (views, memory maps), kept sharing across a swap.
- ``snapshot_file``: the python snapshot's format, and reading it back when a variable fails.
- ``process_state``: what a swap carries besides the namespace (random states, settings).
- ``kernel``: ``Kernel``, the cells' result semantics, reset, and the swap to a snapshot.
- ``introspection``, ``files``: variables, completion and inspection; a machine's files.
- ``figures``: matplotlib's figures and ``_repr_png_`` as images of a result.
- ``display``, ``ipython_shell``: rich display (MIME bundles), and IPython where it is installed.
- ``commands``, ``interrupts``: what both drivers share.
- ``cpython_driver``: the python engine's child process (``main``).
- ``environment``: a python machine's own environment, where its packages go.
- ``pyodide_driver``: the sandbox engine's driver inside Pyodide.
- ``hosted``: the same answers on a hosted ForeverVM machine, sent there as an instruction.

Snapshots name the helpers that rebuild what they hold by this package's top-level name
(``perennial_kernel._rebuild_function``), as the single-module kernel of earlier builds wrote them:
those names live here, whichever module defines them, and pickles are written with them, so a
helper can move between modules without a snapshot noticing.
"""

from . import arrays, pickling, reducers

# The helpers snapshots name, by the module that defines them.
_SNAPSHOT_HELPERS = {
    reducers: (
        "EMPTY_CELL",
        "_EmptyCell",
        "_make_class",
        "_make_enum",
        "_make_function",
        "_make_namedtuple",
        "_rebuild_function",
        "_set_class_state",
        "_set_dataclass_state",
        "_set_enum_state",
        "_set_function_state",
    ),
    pickling: ("_make_closed_file", "_make_lock", "_make_mappingproxy", "_set_instance_dict"),
    arrays: ("_map_file", "_view_of"),
}
for _module, _names in _SNAPSHOT_HELPERS.items():
    for _name in _names:
        _helper = globals()[_name] = getattr(_module, _name)
        if callable(_helper):  # functions and classes; EMPTY_CELL is named through its class
            _helper.__module__ = __name__
del _module, _names, _name, _helper

# The sandbox engine's driver, once ``pyodide_driver`` has started one in this process.
_DRIVER = None
