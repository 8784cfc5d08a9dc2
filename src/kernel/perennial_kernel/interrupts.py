"""Interrupts, for both drivers: a SIGINT is a KeyboardInterrupt in the user's code only while a
cell runs, and never half-way through a message the kernel writes to its host.
"""

import signal
import sys


def _raise_interrupt_at_next_line(frame):
    """Raises KeyboardInterrupt at the next line that ``frame`` or a frame below it runs (or a
    function any of them calls), through a trace function that then gives tracing back."""
    previous = sys.gettrace()
    frames = []

    def tracer(traced, event, arg):
        sys.settrace(previous)
        for each in frames:
            each.f_trace = None
        raise KeyboardInterrupt

    while frame is not None:
        frame.f_trace = tracer
        frames.append(frame)
        frame = frame.f_back
    sys.settrace(tracer)


def install_interrupt_handler(kernel, channel=None):
    """KeyboardInterrupt only while user code runs; an interrupt that arrives while the kernel
    writes a message on ``channel`` is held until the message is whole."""

    def on_sigint(signum, frame):
        if not kernel.running:
            return
        if channel is not None and channel.critical:
            channel.interrupt_pending = True
            return
        raise KeyboardInterrupt

    def on_unraisable(unraisable):
        # An interrupt that landed where Python cannot raise (a weakref callback the garbage
        # collector runs) would be printed as "Exception ignored" and lost.
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            sys.__unraisablehook__(unraisable)
        elif kernel.running:
            _raise_interrupt_at_next_line(sys._getframe(1))

    signal.signal(signal.SIGINT, on_sigint)
    sys.unraisablehook = on_unraisable
