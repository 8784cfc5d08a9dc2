"""Figures as results: matplotlib's open figures and a value's own ``_repr_png_`` become PNG
images of the cell's result, each ``pyplot.show()`` in a cell emitting the figures open then.
"""

import base64
import io
import sys

from .import_hooks import put_first, spec_elsewhere


def repr_png(value):
    """The value's own PNG (``_repr_png_``), base64, or None."""
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


def capture_figures(images):
    """Appends pyplot's open figures to ``images`` (base64 PNGs) and closes them."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    nums = plt.get_fignums()
    for num in nums:
        buf = io.BytesIO()
        plt.figure(num).savefig(buf, format="png", dpi=100, bbox_inches="tight")
        images.append(base64.b64encode(buf.getvalue()).decode("ascii"))
    if nums:
        plt.close("all")


def close_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")


def _make_show(kernel):
    """A replacement for ``matplotlib.pyplot.show`` that emits the open figures into the running
    cell's result. A plain function, because pyplot sets attributes on its ``show``."""

    def show(*args, **kwargs):
        capture_figures(kernel.images)

    return show


class _PyplotHook:
    """Patches ``pyplot.show`` the moment pyplot is imported, so each ``show()`` in a cell
    emits its figures in order. Its name is how a later kernel finds and replaces it."""

    def __init__(self, kernel):
        self._kernel = kernel

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "matplotlib.pyplot":
            return None
        spec = spec_elsewhere(self, fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, kernel = spec.loader, self._kernel
        original = loader.exec_module

        def exec_module(module):
            original(module)
            module.show = _make_show(kernel)
            sys.meta_path.remove(self)

        loader.exec_module = exec_module
        return spec


def install_pyplot_hook(kernel):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        # An earlier kernel's hook, when this one takes over from it.
        sys.meta_path[:] = [finder for finder in sys.meta_path if type(finder).__name__ != "_PyplotHook"]
        plt.show = _make_show(kernel)
    else:
        put_first(_PyplotHook(kernel))
