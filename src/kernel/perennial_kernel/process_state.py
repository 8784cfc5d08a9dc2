"""What a process holds outside the namespace, which a python-engine swap must carry to the next
process for a cell to run the same after it: the random generators' states; numpy's print and error
settings, pandas' options, matplotlib's rcParams and the warnings filters a cell changed, and
which warnings were shown already (a warning shown once per place stays shown); the environment
variables a cell set; and IPython, if a cell made its shell, with the magics that set
its state (``%precision``, ``%matplotlib inline``, ``%load_ext``, ``%config``).

One snapshot segment holds it all (``snapshot_file.PROCESS_SEGMENT``; earlier builds saved only
the random states there, under the same keys). Each part is saved and put back on its own: one
that cannot be is named in the result's losses and the others still come back.
"""

import contextlib
import importlib
import io
import os
import pickle
import sys
import warnings

from .output import short_error

# The environment this process started with: a swap carries what cells changed from it.
_STARTING_ENVIRON = dict(os.environ)

# Line magics whose effect lives in the process; replayed in order after a swap.
STATEFUL_MAGICS = (
    "matplotlib",
    "precision",
    "load_ext",
    "config",
    "xmode",
    "autoreload",
    "aimport",
    "automagic",
    "autocall",
    "colors",
)
# Of these, the ones that add up (each line counts), rather than set one thing.
_CUMULATIVE_MAGICS = ("load_ext", "config", "aimport")


def record_magic(magics, name, line):
    """Notes a stateful line magic that ran, keeping what a replay needs: the last line of a magic
    that sets one thing, every distinct line of one that adds up."""
    if name not in STATEFUL_MAGICS:
        return
    entry = [name, line]
    if name in _CUMULATIVE_MAGICS:
        if entry not in magics:
            magics.append(entry)
    else:
        magics[:] = [m for m in magics if m[0] != name] + [entry]


def capture(kernel):
    """The process's state, as plain data; parts that cannot be pickled are left out and named
    in the returned losses."""
    parts = {
        "random": _random_state,
        "numpy": _numpy_random_state,
        "numpy_print": lambda: _module_call("numpy", "get_printoptions"),
        "numpy_errors": lambda: _module_call("numpy", "geterr"),
        "pandas": _pandas_options,
        "matplotlib": _matplotlib_rc,
        "environ": _environ_changes,
        "warnings": lambda: list(warnings.filters),
        "warned": _warning_registries,
        "ipython": lambda: None if kernel.shell is None else list(kernel.magics),
    }
    state, lost = {}, []
    for key, read in parts.items():
        try:
            value = read()
            if value is not None:
                pickle.dumps(value)
                state[key] = value
        except Exception as exc:
            lost.append({"name": _NAMES[key], "reason": short_error(exc)})
    return state, lost


def apply(kernel, state, lost):
    """Puts back what ``capture`` saved, in the order things depend on: the environment before
    anything reads it, IPython's magics before the settings they touch, the warnings filters
    last (putting back the other parts may change them)."""
    steps = [
        ("environ", _set_environ),
        ("ipython", lambda magics: _replay_magics(kernel, magics)),
        ("matplotlib", _set_matplotlib_rc),
        ("numpy_print", lambda options: importlib.import_module("numpy").set_printoptions(**options)),
        ("numpy_errors", lambda settings: importlib.import_module("numpy").seterr(**settings)),
        ("pandas", _set_pandas_options),
        ("random", lambda value: importlib.import_module("random").setstate(value)),
        ("numpy", lambda value: importlib.import_module("numpy.random").set_state(value)),
        ("warnings", _set_warning_filters),
        ("warned", _set_warning_registries),
    ]
    for key, put in steps:
        if key not in state:
            continue
        try:
            put(state[key])
        except Exception as exc:
            lost.append({"name": _NAMES[key], "reason": short_error(exc)})


_NAMES = {
    "random": "random's state",
    "numpy": "numpy.random's state",
    "numpy_print": "numpy's print options",
    "numpy_errors": "numpy's floating-point error settings",
    "pandas": "pandas' options",
    "matplotlib": "matplotlib's rcParams",
    "environ": "the environment variables the cells set",
    "warnings": "the warnings filters",
    "warned": "which warnings were shown already (a warning shown once may show again)",
    "ipython": "IPython's state (its magics)",
}


def _module_call(module, function):
    loaded = sys.modules.get(module)
    return None if loaded is None else getattr(loaded, function)()


def _random_state():
    return sys.modules["random"].getstate() if "random" in sys.modules else None


def _numpy_random_state():
    numpy_random = sys.modules.get("numpy.random")
    return None if numpy_random is None else numpy_random.get_state()


def _pandas_options():
    """The pandas options that differ from their defaults."""
    if "pandas" not in sys.modules:
        return None
    from pandas._config import config

    changed = {}
    for key, option in config._registered_options.items():
        if key in config._deprecated_options:
            continue
        value = config._get_option(key, silent=True)
        if value != option.defval:
            changed[key] = value
    return changed or None


def _set_pandas_options(changed):
    import pandas

    for key, value in changed.items():
        pandas.set_option(key, value)


def _matplotlib_rc():
    """The rcParams that differ from matplotlib's defaults (a style, seaborn's theme, a cell's own).
    Read as plain dicts, which warn of no deprecated key: ``catch_warnings`` here would change the
    filters, and Python would forget which warnings it showed at every save."""
    mpl = sys.modules.get("matplotlib")
    if mpl is None:
        return None
    defaults = mpl.rcParamsDefault
    changed = {k: v for k, v in dict.items(mpl.rcParams) if k != "backend" and dict.get(defaults, k) != v}
    return changed or None


def _set_matplotlib_rc(changed):
    mpl = importlib.import_module("matplotlib")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mpl.rcParams.update(changed)


def _environ_changes():
    now = dict(os.environ)
    changed = {k: v for k, v in now.items() if _STARTING_ENVIRON.get(k) != v}
    removed = [k for k in _STARTING_ENVIRON if k not in now]
    return {"set": changed, "unset": removed} if changed or removed else None


def _set_environ(changes):
    os.environ.update(changes["set"])
    for key in changes["unset"]:
        os.environ.pop(key, None)


def _replay_magics(kernel, magics):
    shell = kernel.ipython()
    if shell is None:
        raise RuntimeError("this interpreter has no IPython any more")
    failed = []
    for name, line in magics:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                shell.run_line_magic(name, line)
        except Exception as exc:
            failed.append(f"%{name} {line}: {short_error(exc)}")
    if failed:
        raise RuntimeError("; ".join(failed))


def _set_warning_filters(filters):
    # In place: Python's warnings machinery holds this list.
    warnings.filters[:] = filters


def _warning_registries():
    """Each module's record of the warnings it showed, which the "default" and "module" actions
    read to show a warning once per place; without it a swap would show them all again. Only
    records still in force: Python forgets one (shows its warnings again) once the filters change."""
    current = _registry_version()
    shown = {}
    for name, module in list(sys.modules.items()):
        registry = getattr(module, "__dict__", {}).get("__warningregistry__")
        if not isinstance(registry, dict) or registry.get("version") != current:
            continue
        entries = {k: v for k, v in registry.items() if k != "version"}
        if entries:
            shown[name] = entries
    if warnings.onceregistry:
        shown[_ONCE] = dict(warnings.onceregistry)
    return shown or None


_ONCE = "\0once"
_PROBE = "perennial: the warnings registry's version"


def _set_warning_registries(shown):
    version = _registry_version()
    for name, entries in shown.items():
        if name == _ONCE:
            warnings.onceregistry.update(entries)
            continue
        module = sys.modules.get(name) or importlib.import_module(name)
        registry = module.__dict__.setdefault("__warningregistry__", {})
        registry.clear()
        registry.update(entries)
        registry["version"] = version


@contextlib.contextmanager
def warnings_kept():
    """Perennial's own work (making IPython's shell, which adds warnings filters) leaves which
    warnings were shown as it was: changing the filters would otherwise make Python forget them."""
    shown = _warning_registries()
    yield
    if shown:
        _set_warning_registries(shown)


@contextlib.contextmanager
def warnings_hidden():
    """Warnings raised while Perennial's own code touches the user's objects (a summary, a
    pickle, a completion) are shown to no one: they are not the user's cell's. The filters stay
    as they are, since changing them would make Python forget which warnings it showed."""
    show = warnings._showwarnmsg
    warnings._showwarnmsg = lambda message: None
    try:
        yield
    finally:
        warnings._showwarnmsg = show


def _registry_version():
    """The version a registry must carry to count under the current filters. Python does not
    expose it, but stamps it on the registry a warning is checked against: a probe warning,
    whatever the filters make of it, shows nothing and changes no filter."""
    probe = {}
    with warnings_hidden():
        try:
            warnings.warn_explicit(_PROBE, UserWarning, "<perennial>", 0, module="<perennial>", registry=probe)
        except Warning:  # filters that turn warnings into errors
            pass
    return probe.get("version")
