"""What the kernel does as libraries are imported (pyplot's ``show``, the ``comm`` package,
``ipywidgets``): finders first on ``sys.meta_path`` that find a module as Python would, then
wrap its loading."""

import importlib.util
import sys


def spec_elsewhere(finder, fullname):
    """The spec the other finders give ``fullname``."""
    sys.meta_path.remove(finder)
    try:
        return importlib.util.find_spec(fullname)
    finally:
        sys.meta_path.insert(0, finder)


def put_first(finder):
    """``finder`` first, in place of any of its class's name: an earlier kernel's, which this one takes over."""
    name = type(finder).__name__
    sys.meta_path[:] = [finder, *(other for other in sys.meta_path if type(other).__name__ != name)]
