"""What the REPL defines, saved by value: its functions (with their source, so that another
Python can compile them again) and its classes (enums, namedtuples and dataclasses regenerated
where they are loaded, since what their makers generate differs between Python versions).

Each ``reduce_*`` answers a pickle reduce tuple; the ``_make_*``/``_set_*`` helpers it names are
called by the unpickler. Snapshots name those helpers by the package's top-level name (see
``__init__``), so they keep their names when they move.
"""

import ast
import builtins
import collections
import contextlib
import enum
import functools
import linecache
import marshal
import sys
import textwrap
import types


class _Unsaveable(TypeError):
    """Something bound to the running process, which no pickler may pretend to save (or, at a
    load, something saved only for the Python that wrote it)."""


class _EmptyCell:
    """Stands for an unassigned closure cell in a pickled function."""

    def __reduce__(self):
        return "EMPTY_CELL"


EMPTY_CELL = _EmptyCell()

# The cache tag of the Python that wrote the snapshot being restored, while it is restored.
_restoring_tag = None


@contextlib.contextmanager
def restoring(cache_tag):
    """While a snapshot that ``cache_tag``'s Python wrote loads: its functions are compiled again
    from their source when that is another Python (``_rebuild_function``)."""
    global _restoring_tag
    _restoring_tag = cache_tag
    try:
        yield
    finally:
        _restoring_tag = None


def _namespace():
    """The user's namespace, which the kernel makes the process's ``__main__``."""
    return sys.modules["__main__"].__dict__


# -- functions -------------------------------------------------------------------------------------


def reduce_function(func):
    code = func.__code__
    if func.__globals__ is _namespace():
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


def _make_function(code_bytes, name, ncells, own_globals):
    """A REPL function as snapshots of builds before 0.2.0 saved it: its bytecode alone, which
    only the Python that wrote it can run."""
    if _restoring_tag not in (None, sys.implementation.cache_tag):
        raise _Unsaveable(f"its bytecode is for {_restoring_tag}, and the Perennial that saved it kept no source")
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
        globs = _namespace()
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


def forget_parsed_cells():
    """Drops the cells' syntax trees a snapshot parsed: kept, they would fill the machine's memory."""
    _parse_cell.cache_clear()


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
    outer = next(
        c
        for c in compile(module, filename, "exec").co_consts
        if isinstance(c, types.CodeType) and c.co_name == "__perennial_scope__"
    )
    return next(c for c in outer.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def _code_global_names(code):
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_global_names(const)
    return names


# -- classes ---------------------------------------------------------------------------------------

_CLASS_SKIP = frozenset({"__dict__", "__weakref__", "_abc_impl", "__slots__", "__qualname__"})


def reduce_class(cls):
    if isinstance(cls, enum.EnumMeta):
        return _reduce_enum(cls)
    if issubclass(cls, tuple) and "_fields" in cls.__dict__:
        return _reduce_namedtuple(cls)
    slots = cls.__dict__.get("__slots__")
    if isinstance(slots, str):
        slots = (slots,)
    slot_names = set(slots or ())
    attrs = {k: v for k, v in cls.__dict__.items() if k not in _CLASS_SKIP and k not in slot_names}
    args = (type(cls), cls.__name__, cls.__bases__, slots, cls.__qualname__)
    params = cls.__dict__.get("__dataclass_params__")
    if params is not None and not getattr(params, "slots", False):
        return _make_class, args, _dataclass_state(cls, params, attrs), None, None, _set_dataclass_state
    return _make_class, args, attrs, None, None, _set_class_state


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
    {
        "__new__",
        "_member_names_",
        "_member_map_",
        "_member_type_",
        "_value2member_map_",
        "_unhashable_values_",
        "_new_member_",
        "_use_args_",
        "_value_repr_",
        "_boundary_",
        "_flag_mask_",
        "_singles_mask_",
        "_all_bits_",
        "_inverted_",
        "__new_member__",
    }
)


def _reduce_enum(cls):
    """An enum class is rebuilt with its members' values (aliases included), then its methods and
    the members' own attributes are set, as set on any class once it exists."""
    members = {name: member._value_ for name, member in cls.__members__.items()}
    attrs = {
        k: v for k, v in cls.__dict__.items() if k not in _CLASS_SKIP and k not in _ENUM_INTERNALS and k not in members
    }
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
    attrs = {
        k: v for k, v in cls.__dict__.items() if k not in _CLASS_SKIP and (k not in vars(generated) or k == "__doc__")
    }
    if attrs.get("__doc__") == generated.__doc__:
        del attrs["__doc__"]
    defaults = tuple(cls._field_defaults[f] for f in cls._fields if f in cls._field_defaults)
    return (
        _make_namedtuple,
        (cls.__name__, cls._fields, defaults, cls.__qualname__),
        attrs,
        None,
        None,
        _set_class_state,
    )


def _make_namedtuple(name, fields, defaults, qualname):
    cls = collections.namedtuple(name, fields, defaults=defaults, module="__main__")
    cls.__qualname__ = qualname
    return cls


# What the dataclass decorator writes into a class besides the methods it generates.
_DATACLASS_MADE = frozenset({"__dataclass_params__", "__dataclass_fields__", "__match_args__"})
_DATACLASS_OPTIONS = ("init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only", "weakref_slot")
_FIELD_OPTIONS = ("default", "default_factory", "init", "repr", "hash", "compare", "metadata", "kw_only", "doc")


def _dataclass_state(cls, params, attrs):
    """A dataclass is saved as its class without what ``@dataclass`` generated (those methods are
    compiled from text of its own, and differ between Python versions), with the decorator's
    options and its fields as plain values, so that the decorator makes them again where it is
    loaded (``_set_dataclass_state``)."""
    import dataclasses

    options = {name: getattr(params, name) for name in _DATACLASS_OPTIONS if hasattr(params, name)}
    fields = {
        name: {option: getattr(f, option) for option in _FIELD_OPTIONS if hasattr(f, option)}
        for name, f in cls.__dict__["__dataclass_fields__"].items()
        if f._field_type is dataclasses._FIELD
    }
    kept = {k: v for k, v in attrs.items() if k not in _DATACLASS_MADE and not _made_by_dataclass(v)}
    return kept, options, fields


def _made_by_dataclass(value):
    """Whether a class attribute is a method ``@dataclass`` generated (compiled from a string)."""
    func = getattr(value, "__wrapped__", value)
    return isinstance(func, types.FunctionType) and func.__code__.co_filename == "<string>"


def _set_dataclass_state(cls, state):
    import dataclasses
    import inspect

    attrs, options, fields = state
    _set_class_state(cls, attrs)
    accepted = inspect.signature(dataclasses.field).parameters
    for name, saved in fields.items():
        given = {k: v for k, v in saved.items() if k in accepted and v is not dataclasses.MISSING}
        setattr(cls, name, dataclasses.field(**given))
    accepted = inspect.signature(dataclasses.dataclass).parameters
    return dataclasses.dataclass(cls, **{k: v for k, v in options.items() if k in accepted})
