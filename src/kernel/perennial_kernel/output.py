"""A cell's stdout and stderr: capped per instruction, coalesced, and sent to the host as text.

``sys.stdout`` and ``sys.stderr`` are ``StreamWriter``s into the kernel's ``OutputSink``; the
host splits what it gets into line chunks.
"""

import contextlib
import io
import threading
import time

DEFAULT_OUTPUT_LIMIT = 1 << 20


class OutputSink:
    """Collects stdout/stderr text of a cell, enforcing the per-instruction byte cap.

    ``send(stream, text)`` is called with coalesced text; the host splits it into line chunks.
    """

    def __init__(self, send, limit=DEFAULT_OUTPUT_LIMIT, widgets=None):
        self._send = send
        self.limit = limit
        # ipywidgets' Output widgets (``output_widgets``): text printed inside ``with out:`` is theirs.
        self._widgets = widgets
        self._lock = threading.RLock()
        self._pending = []  # [stream, [parts], size]
        self._used = 0
        # Characters of the cell's output let through, where a display is placed among them.
        self.written = 0
        self._dropped = 0
        self._dropped_stream = "stdout"
        self._last_flush = time.monotonic()
        self.wake = threading.Event()
        # Text waits to be sent with what follows only where a thread sends it after a pause;
        # without one (Pyodide), what a cell prints before a long computation would wait for its end.
        self.coalesce = True

    def reset(self):
        with self._lock:
            self._used = 0
            self.written = 0
            self._dropped = 0

    def write(self, stream, text):
        if not text or (self._widgets is not None and self._widgets.stream(stream, text)):
            return
        size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        with self._lock:
            room = self.limit - self._used
            if room <= 0:
                self._dropped += size
                self._dropped_stream = stream
                return
            if size > room:
                text = text.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
                self._dropped += size - room
                self._dropped_stream = stream
                size = room
            self._used += size
            self.written += len(text)
            if not self.coalesce:
                self._send(stream, text)
                return
            if self._pending and self._pending[0] != stream:
                self._flush_locked()
            if not self._pending:
                self._pending = [stream, [], 0]
            self._pending[1].append(text)
            self._pending[2] += size
            if self._pending[2] >= 16384 or time.monotonic() - self._last_flush > 0.05:
                self._flush_locked()
            else:
                self.wake.set()

    def flush(self):
        with self._lock:
            self._flush_locked()

    @contextlib.contextmanager
    def diverted(self, send):
        """Output to ``send`` meanwhile, under its own cap: what a comm's handler prints outside a cell."""
        with self._lock:
            self._flush_locked()
            kept, self._send = self._send, send
            self.reset()
        try:
            yield
        finally:
            self.finish()
            with self._lock:
                self._send = kept
                self.reset()

    def finish(self):
        """Flushes everything and appends the truncation marker if the cap was reached; answers
        how many bytes the cap dropped."""
        with self._lock:
            self._flush_locked()
            dropped = self._dropped
            if dropped:
                marker = f"\n[perennial: output truncated at {self.limit} bytes; {dropped} more bytes were dropped]\n"
                self._send(self._dropped_stream, marker)
                self._dropped = 0
            return dropped

    def _flush_locked(self):
        if self._widgets is not None:
            self._widgets.flush()
        if self._pending:
            stream, parts, _ = self._pending
            self._pending = []
            self._send(stream, "".join(parts))
        self._last_flush = time.monotonic()


class StreamWriter(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` replacement: unbuffered text into the kernel's sink."""

    def __init__(self, sink, name, fd):
        self._sink = sink
        self._name = name
        self._fd = fd

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "backslashreplace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        # Subprocesses and C code write to the real descriptor, which the host also captures.
        if self._fd is None:
            raise io.UnsupportedOperation("fileno")
        return self._fd

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._sink.write(self._name, text)
        return len(text)

    def flush(self):
        self._sink.flush()

    @property
    def buffer(self):
        return _BinaryWriter(self)


def stream_writer(sink, name, fd, earlier):
    """A ``StreamWriter`` into ``sink``: the earlier kernel's own object when there is one, made
    over into this kernel's class, so that what code kept of it (a logging handler) writes on."""
    if earlier is None:
        return StreamWriter(sink, name, fd)
    earlier.__class__ = StreamWriter
    StreamWriter.__init__(earlier, sink, name, fd)
    return earlier


def stream_name(writer):
    """``"stdout"`` or ``"stderr"``: which of the kernel's streams ``writer`` is."""
    return writer._name


class _BinaryWriter(io.RawIOBase):
    """``sys.stdout.buffer``: bytes are decoded and join the text stream."""

    def __init__(self, text):
        self._text = text

    def writable(self):
        return True

    def write(self, data):
        self._text.write(bytes(data).decode("utf-8", "backslashreplace"))
        return len(data)


def short_error(exc):
    """An exception in one line, as results and losses name it."""
    return f"{type(exc).__name__}: {exc}"
