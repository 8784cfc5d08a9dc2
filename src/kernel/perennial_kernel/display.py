"""Rich display: what a cell shows besides its text, as MIME bundles in the order shown.

``display(obj)`` is a builtin, as in IPython. With IPython, IPython formats (``ipython_shell``);
without it, an object's own ``_repr_*_`` methods give its bundle here. A cell's bundles go in its
result's ``data.display``, capped per cell like its output.
"""

import base64
import builtins
import contextlib
import json
import sys

# The methods IPython's formatters call, by the MIME type they give.
_REPR_METHODS = (
    ("text/html", "_repr_html_"),
    ("text/markdown", "_repr_markdown_"),
    ("image/svg+xml", "_repr_svg_"),
    ("image/png", "_repr_png_"),
    ("image/jpeg", "_repr_jpeg_"),
    ("text/latex", "_repr_latex_"),
    ("application/json", "_repr_json_"),
    ("application/javascript", "_repr_javascript_"),
    ("application/pdf", "_repr_pdf_"),
)
_BINARY = {"image/png", "image/jpeg", "application/pdf"}
_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def has_rich_repr(value):
    """Whether IPython would show ``value`` as more than text (its images aside, which are the
    result's figures)."""
    kind = type(value)
    return hasattr(kind, "_repr_mimebundle_") or any(
        hasattr(kind, name) for mime, name in _REPR_METHODS if mime not in _BINARY
    )


class Displays:
    """What one cell displays, in order: ``{"data", "metadata", "transient"?, "update"?}``
    bundles, ``{"clear": True, "wait": ...}`` marks, and the cell's value as IPython shows it
    (``"result": True``). ``output_chars``: how much of the cell's output came before it, so that a
    notebook can put it in its place. Past ``limit`` characters a cell's bundles are dropped, and
    one entry says how many."""

    def __init__(self, sink, show=None, widgets=None):
        """``show``: called with each entry as it comes, for a surface that shows them while the
        cell still runs (the driver sends it to the host after the output before it). ``widgets``:
        ipywidgets' Output widgets, whose ``with out:`` takes what is displayed inside it."""
        self._sink = sink
        self._show = show
        self._widgets = widgets
        self.reset()

    def reset(self):
        self.entries = []
        self._used = 0
        self._dropped = 0

    def publish(self, data, metadata=None, transient=None, update=False, result=False, page=False):
        data = {mime: _jsonable(mime, value) for mime, value in data.items()}
        if _WIDGET_VIEW in data and "text/plain" not in data:
            data["text/plain"] = _widget_text(data[_WIDGET_VIEW])
        if not (result or page or update) and self._widgets is not None and self._widgets.display(data, metadata or {}):
            return
        if not self._room(data):
            return
        entry = {"data": data, "metadata": metadata or {}, "output_chars": self._sink.written}
        if transient:
            entry["transient"] = transient
        if update:
            entry["update"] = True
        if result:
            entry["result"] = True
        if page:
            entry["page"] = True
        self._add(entry)

    def comm(self, msg_type, content, metadata, buffers):
        """A comm's message to the front end (``comms``), in its place among the cell's displays."""
        message = {"msg_type": msg_type, "content": content, "metadata": metadata, "buffers": buffers}
        if self._room(message):
            self._add({"comm": message, "output_chars": self._sink.written})

    def _room(self, entry):
        size = len(json.dumps(entry, default=repr))
        if self._used + size > self._sink.limit:
            self._dropped += 1
            return False
        self._used += size
        return True

    @contextlib.contextmanager
    def diverted(self, show):
        """Every entry to ``show`` meanwhile, none kept: what a comm's handler displays outside a cell."""
        kept, self._show = self._show, show
        try:
            yield
        finally:
            self._show = kept
            self.reset()

    def clear(self, wait=False):
        if self._widgets is not None and self._widgets.clear(wait):
            return
        self._add({"clear": True, "wait": bool(wait), "output_chars": self._sink.written})

    def _add(self, entry):
        self.entries.append(entry)
        if self._show is not None:
            self._sink.flush()
            self._show(entry)

    def take(self):
        """The cell's entries, and a note of what the cap dropped."""
        entries = self.entries
        if self._dropped:
            note = f"[perennial: {self._dropped} more display output(s) dropped: a cell's displays are capped at {self._sink.limit} bytes, as its output is]"
            entries = [*entries, {"data": {"text/plain": note}, "metadata": {}, "output_chars": self._sink.written}]
        self.reset()
        return entries


def _widget_text(view):
    """A widget's text form, for a surface that cannot show the widget: its repr."""
    widgets = getattr(sys.modules.get("ipywidgets"), "Widget", None)
    widget = getattr(widgets, "widgets", {}).get(view.get("model_id")) if isinstance(view, dict) else None
    return repr(widget) if widget is not None else "A widget (a front end with ipywidgets shows it)"


def _jsonable(mime, value):
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii") if mime in _BINARY else bytes(value).decode("utf-8", "replace")
    return value


def mime_bundle(obj):
    """``obj``'s MIME bundle from its own ``_repr_*_`` methods (``_repr_mimebundle_`` first), as
    IPython's formatters make it, for an interpreter without IPython: (data, metadata)."""
    data, metadata = {}, {}
    method = getattr(type(obj), "_repr_mimebundle_", None)
    if method is not None:
        try:
            bundle = method(obj)
        except Exception:
            bundle = None
        if isinstance(bundle, tuple) and len(bundle) == 2:
            bundle, metadata = bundle[0], dict(bundle[1] or {})
        if isinstance(bundle, dict):
            data.update(bundle)
    for mime, name in _REPR_METHODS:
        method = getattr(type(obj), name, None)
        if mime in data or method is None:
            continue
        try:
            value = method(obj)
        except Exception:
            continue
        if isinstance(value, tuple) and len(value) == 2:
            value, metadata[mime] = value
        if value is not None:
            data[mime] = value
    data.setdefault("text/plain", repr(obj))
    return data, metadata


def install_display(kernel):
    """``display`` as a builtin: IPython's where the machine has IPython, else one that shows an
    object's own MIME bundle."""

    def display(
        *objs,
        include=None,
        exclude=None,
        metadata=None,
        transient=None,
        display_id=None,
        raw=False,
        clear=False,
        **kwargs,
    ):
        shell = kernel.ipython()
        if shell is not None:
            from IPython.display import display as ipython_display

            return ipython_display(
                *objs,
                include=include,
                exclude=exclude,
                metadata=metadata,
                transient=transient,
                display_id=display_id,
                raw=raw,
                clear=clear,
                **kwargs,
            )
        if clear:
            kernel.displays.clear(wait=True)
        for obj in objs:
            data, own_metadata = (obj, {}) if raw else mime_bundle(obj)
            kernel.displays.publish(
                {m: v for m, v in data.items() if (include is None or m in include) and m not in (exclude or ())},
                {**own_metadata, **(metadata or {})},
                transient={**(transient or {}), **({"display_id": display_id} if display_id else {})},
            )
        return None

    builtins.display = display
