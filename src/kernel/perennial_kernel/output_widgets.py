"""ipywidgets' ``Output`` widget, working as Jupyter's front ends make it work: what runs inside
``with out:`` (``interact``'s function among it) prints and displays into ``out.outputs``, the
widget's own state that every front end shows, not into the cell's output.

A front end does it by the ``msg_id`` of each message's parent, which ``with out:`` sets on the
widget from ``kernel.get_parent()``. A machine sends no messages: its kernel gives a parent of its
own (``PARENT``), and while an Output widget holds that id, its output goes to the widget here.
"""

import threading

PARENT = {
    "header": {"msg_id": "perennial-output-widget", "msg_type": "execute_request", "session": "perennial"},
    "parent_header": {},
    "metadata": {},
    "content": {},
}


class OutputWidgets:
    """The Output widgets inside ``with``, innermost last, and the stream text on its way to one."""

    def __init__(self):
        self._inside = []
        self._pending = None  # [widget, stream name, [text parts]]
        self._clear_waiting = set()
        self._lock = threading.RLock()

    def track(self, handler):
        """A comm's message handler, as a widget sets it: an Output widget is watched from then on,
        entering and leaving ``with``."""
        widget = getattr(handler, "__self__", None)
        if widget is not None and all(hasattr(widget, name) for name in ("msg_id", "outputs", "observe")):
            widget.observe(self._moved, names="msg_id")

    def _moved(self, change):
        with self._lock:
            self.flush()
            widget = change["owner"]
            self._inside = [w for w in self._inside if w is not widget]
            if change["new"] == PARENT["header"]["msg_id"]:
                self._inside.append(widget)

    def stream(self, name, text):
        """Takes printed text for the innermost widget inside ``with``; False when there is none."""
        # Every write of every cell comes here: without a widget inside ``with``, no lock is taken.
        if not self._inside:
            return False
        with self._lock:
            if not self._inside:
                return False
            widget = self._inside[-1]
            if self._pending and (self._pending[0] is not widget or self._pending[1] != name):
                self.flush()
            if self._pending is None:
                self._pending = [widget, name, []]
            self._pending[2].append(text)
            return True

    def display(self, data, metadata):
        """Takes a displayed bundle, as ``display_data``; False when no widget is inside ``with``."""
        with self._lock:
            if not self._inside:
                return False
            self.flush()
            self._add(self._inside[-1], {"output_type": "display_data", "data": data, "metadata": metadata})
            return True

    def clear(self, wait):
        """``clear_output()`` inside ``with``: the widget's outputs go (with ``wait``, once the next comes)."""
        with self._lock:
            if not self._inside:
                return False
            self.flush()
            widget = self._inside[-1]
            if wait:
                self._clear_waiting.add(id(widget))
            else:
                widget.outputs = ()
            return True

    def flush(self):
        """Sends the pending text to its widget: one stream output, joined to the last when it is
        of the same stream, as a notebook shows it."""
        if self._pending is None:
            return
        with self._lock:
            if self._pending is None:
                return
            widget, name, parts = self._pending
            self._pending = None
            text = "".join(parts)
            last = widget.outputs[-1] if widget.outputs and id(widget) not in self._clear_waiting else None
            if last and last.get("output_type") == "stream" and last.get("name") == name:
                widget.outputs = (*widget.outputs[:-1], {**last, "text": last["text"] + text})
            else:
                self._add(widget, {"output_type": "stream", "name": name, "text": text})

    def _add(self, widget, output):
        earlier = () if id(widget) in self._clear_waiting else widget.outputs
        self._clear_waiting.discard(id(widget))
        widget.outputs = (*earlier, output)
