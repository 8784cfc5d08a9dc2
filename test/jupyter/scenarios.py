"""Perennial's Jupyter kernel driven by Jupyter's own client (jupyter_client, nbclient), every
message it sends checked by ipykernel's message-spec references.

Run by test/integration/jupyter-kernel.test.ts: python3 scenarios.py SCENARIO, with
JUPYTER_DATA_DIR holding the kernelspec PERENNIAL_KERNEL_NAME, PERENNIAL_CLI and
PERENNIAL_DATA_DIR naming the CLI and its data dir, and NOTEBOOK_DIR a folder for notebooks.
Each scenario asserts; a failure is a traceback and a non-zero exit.
"""

import os
import signal
import subprocess
import sys

import nbformat
from ipykernel.tests.test_message_spec import validate_message
from jupyter_client import KernelManager
from nbclient import NotebookClient

KERNEL = os.environ["PERENNIAL_KERNEL_NAME"]
NOTEBOOK_DIR = os.environ["NOTEBOOK_DIR"]
TIMEOUT = 120


def cli(*args):
    done = subprocess.run(
        [
            os.environ.get("PERENNIAL_NODE", "node"),
            os.environ["PERENNIAL_CLI"],
            "--data-dir",
            os.environ["PERENNIAL_DATA_DIR"],
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def start(session_name=None):
    """A kernel as jupyter_server starts one for a notebook: in its folder, with its path."""
    env = dict(os.environ)
    env.pop("JPY_SESSION_NAME", None)
    if session_name:
        env["JPY_SESSION_NAME"] = session_name
    km = KernelManager(kernel_name=KERNEL)
    km.start_kernel(env=env, cwd=NOTEBOOK_DIR)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return km, kc


def run(kc, code, **kwargs):
    """Executes code; answers (reply, the cell's iopub messages until idle), each message validated."""
    msg_id = kc.execute(code, **kwargs)
    messages = []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        validate_message(msg, parent=msg_id)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        messages.append(msg)
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    validate_message(reply, "execute_reply", msg_id)
    return reply["content"], messages


def value(messages):
    results = [m["content"]["data"]["text/plain"] for m in messages if m["msg_type"] == "execute_result"]
    assert len(results) == 1, messages
    return results[0]


def stderr(messages):
    return "".join(
        m["content"]["text"] for m in messages if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"
    )


def stop(km, kc):
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def kernel_death():
    """A kernel killed (kill -9), then the Perennial server stopped: each new kernel for the notebook finds x."""
    km, kc = start("work/analysis.ipynb")
    reply, messages = run(kc, "x = 41\ndef double(v):\n    return 2 * v\nimport json")
    assert reply["status"] == "ok", reply
    assert "is new, and this notebook's" in stderr(messages), messages
    os.kill(km.provisioner.process.pid, signal.SIGKILL)
    km.provisioner.process.wait(TIMEOUT)
    kc.stop_channels()
    km.cleanup_resources()

    km, kc = start("work/analysis.ipynb")
    _, messages = run(kc, "x + 1")
    assert value(messages) == "42", messages
    assert "are as the last kernel left them" in stderr(messages), messages
    stop(km, kc)
    print("ok: a new kernel after kill -9 found x")

    cli("stop")
    km, kc = start("work/analysis.ipynb")
    _, messages = run(kc, "double(x + 1), json.dumps([1])")
    assert value(messages) == "(84, '[1]')", messages
    stop(km, kc)
    print("ok: a new kernel after the server stopped found x, a function and an import")

    km, kc = start("work/other.ipynb")
    _, messages = run(kc, "'x' in dir()")
    assert value(messages) == "False", messages
    stop(km, kc)
    print("ok: another notebook has a machine of its own")


def interrupt():
    """An interrupt by message stops the running cell; the state is kept."""
    km, kc = start("interrupt.ipynb")
    run(kc, "kept = 'yes'")
    msg_id = kc.execute("import time\nfor _ in range(6000):\n    time.sleep(0.1)")
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
            break
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    validate_message(reply, "execute_reply", msg_id)
    assert reply["content"]["status"] == "error", reply
    assert reply["content"]["ename"] == "KeyboardInterrupt", reply
    _, messages = run(kc, "kept")
    assert value(messages) == "'yes'", messages
    stop(km, kc)
    print("ok: interrupted by message, state kept")


def restart():
    """A restart gives a clean namespace; the state before is a checkpoint, which brings it back."""
    km, kc = start("restart.ipynb")
    run(kc, "z = 5")
    km.restart_kernel(now=False)
    kc.stop_channels()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    _, messages = run(kc, "'z' in dir()")
    assert value(messages) == "False", messages
    notes = stderr(messages)
    assert "Restarted: a clean namespace" in notes, notes
    checkpoint = notes.split("checkpoint ")[1].split(" ")[0]
    machine = notes.split("Machine ")[1].split(" ")[0]
    cli("rollback", machine, checkpoint)
    _, messages = run(kc, "z")
    assert value(messages) == "5", messages
    stop(km, kc)
    print(f"ok: restart cleared the namespace; checkpoint {checkpoint} brought z back")


def stdin():
    """input() is asked on the stdin channel and answered from it; getpass too, as a password."""
    km, kc = start("input.ipynb")
    msg_id = kc.execute("name = input('Who? ')\nimport getpass\nsecret = getpass.getpass('Key: ')", allow_stdin=True)
    for prompt, password, answer in (("Who? ", False, "Ada"), ("Key: ", True, "s3cret")):
        request = kc.get_stdin_msg(timeout=TIMEOUT)
        # ipykernel's references leave the stdin channel out.
        assert request["msg_type"] == "input_request" and request["parent_header"]["msg_id"] == msg_id, request
        assert request["content"] == {"prompt": prompt, "password": password}, request
        kc.input(answer)
    reply = kc.get_shell_msg(timeout=TIMEOUT)
    assert reply["content"]["status"] == "ok", reply
    _, messages = run(kc, "name, secret")
    assert value(messages) == "('Ada', 's3cret')", messages
    reply, messages = run(kc, "input('no stdin here')", allow_stdin=False)
    assert reply["status"] == "error" and reply["ename"] == "EOFError", reply
    stop(km, kc)
    print("ok: input() and getpass() answered through stdin; without stdin, EOFError")


def notebook():
    """nbclient (what papermill runs on) executes a notebook: streams, a figure as PNG, HTML, an error."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("print('hello from a machine')"),
        nbformat.v4.new_code_cell(
            "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()"
        ),
        nbformat.v4.new_code_cell("from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))\n6 * 7"),
        nbformat.v4.new_code_cell("1 / 0"),
    ]
    NotebookClient(
        nb, kernel_name=KERNEL, timeout=TIMEOUT, allow_errors=True, resources={"metadata": {"path": NOTEBOOK_DIR}}
    ).execute()
    printed, figure, shown, failed = (cell.outputs for cell in nb.cells)
    assert any(o.output_type == "stream" and "hello from a machine" in o.text for o in printed), printed
    assert any(o.output_type == "display_data" and "image/png" in o.data for o in figure), figure
    assert any(o.output_type == "display_data" and o.data.get("text/html") == "<b>bold</b>" for o in shown), shown
    assert any(o.output_type == "execute_result" and o.data["text/plain"] == "42" for o in shown), shown
    assert any(o.output_type == "error" and o.ename == "ZeroDivisionError" for o in failed), failed
    assert all(isinstance(cell.execution_count, int) and cell.execution_count > 0 for cell in nb.cells)
    print("ok: nbclient ran the notebook: stream, image/png, text/html, execute_result, error")


if __name__ == "__main__":
    globals()[sys.argv[1]]()
