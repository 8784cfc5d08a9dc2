"""``input()`` and ``getpass.getpass()`` in a machine. A machine has no keyboard: the question goes
to whoever sent the running cell (a terminal, an input box, an MCP client that can elicit), through
the driver's ``ask``. Where nobody can answer, the cell gets an EOFError that says why.
"""

import builtins
import getpass
import threading


class Questions:
    """``ask(prompt, password)`` returns the answer or raises EOFError with the reason there is
    none; a driver that cannot ask passes ``None``, with ``unable``, the reason."""

    def __init__(self, kernel, ask=None, unable=None):
        self._kernel = kernel
        self._ask = ask
        self._unable = unable or "this machine cannot ask for input"

    def input(self, prompt=""):
        return self._read(str(prompt), password=False)

    def getpass(self, prompt="Password: ", stream=None):
        return self._read(str(prompt), password=True)

    def _read(self, prompt, password):
        try:
            if self._ask is None:
                raise EOFError(f"input() has no answer: {self._unable}; put the value in the code instead")
            if not self._kernel.running or threading.current_thread() is not threading.main_thread():
                raise EOFError("input() has no answer: only a cell's own code can ask, not a thread it started")
            self._kernel.sink.flush()
            answer = self._ask(prompt, password)
        except EOFError:
            # As Python does at the end of its input: the prompt, then the error.
            self._kernel.stdout.write(prompt)
            raise
        # The output keeps the question and its answer, as a terminal shows them; never a password.
        self._kernel.stdout.write(prompt + ("" if password else answer) + "\n")
        return answer


def install_questions(kernel, ask=None, unable=None):
    """``input`` and ``getpass.getpass``, through the kernel's ``questions``."""
    questions = kernel.questions = Questions(kernel, ask, unable)
    builtins.input = questions.input
    getpass.getpass = questions.getpass
