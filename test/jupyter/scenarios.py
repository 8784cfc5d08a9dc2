"""Perennial's Jupyter kernel driven by Jupyter's own client (jupyter_client, nbclient), every
message it sends checked by ipykernel's message-spec references.

Run by test/integration/jupyter-kernel.test.ts: python3 scenarios.py SCENARIO, with
JUPYTER_DATA_DIR holding the kernelspec PERENNIAL_KERNEL_NAME, PERENNIAL_CLI and
PERENNIAL_DATA_DIR naming the CLI and its data dir, and NOTEBOOK_DIR a folder for notebooks.
Each scenario asserts; a failure is a traceback and a non-zero exit.
"""

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import nbformat
from ipykernel.tests.test_message_spec import references, validate_message
from jupyter_client import BlockingKernelClient, KernelManager
from nbclient import NotebookClient

KERNEL = os.environ["PERENNIAL_KERNEL_NAME"]
# The same kernel on the sandbox engine (perennial kernel install --engine sandbox).
SANDBOX_KERNEL = os.environ["PERENNIAL_SANDBOX_KERNEL_NAME"]
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


def machines(**tags):
    """The machines carrying these tags, newest first."""
    return json.loads(cli("machine", "list", "--json", *(f"--tag={k}={v}" for k, v in tags.items())))


def notebook_machine(path):
    """The machine of the notebook at ``path`` (absolute), which must be one."""
    found = machines(**{"jupyter-notebook": path})
    assert len(found) == 1, found
    return found[0]


def start(session_name=None, kernel=KERNEL):
    """A kernel as jupyter_server starts one for a notebook: in its folder, with its path."""
    env = dict(os.environ)
    env.pop("JPY_SESSION_NAME", None)
    if session_name:
        env["JPY_SESSION_NAME"] = session_name
    km = KernelManager(kernel_name=kernel)
    km.start_kernel(env=env, cwd=NOTEBOOK_DIR)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return km, kc


# What the messaging spec says of the messages ipykernel's references leave out (comms, clear_output).
SPEC_KEYS = {
    "comm_open": {"comm_id", "target_name", "data"},
    "comm_msg": {"comm_id", "data"},
    "comm_close": {"comm_id", "data"},
    "clear_output": {"wait"},
}


def check(msg, parent):
    """``msg`` against the spec: ipykernel's references, or the keys of the messages they leave out."""
    if msg["msg_type"] in references:
        data = msg["content"].get("data")
        if msg["msg_type"] in ("display_data", "update_display_data", "execute_result") and isinstance(data, dict):
            # The spec carries a JSON MIME type's data as JSON; ipykernel's reference knows only text.
            jsonable = {
                k: json.dumps(v) if k.endswith("json") and not isinstance(v, str) else v for k, v in data.items()
            }
            msg = {**msg, "content": {**msg["content"], "data": jsonable}}
        validate_message(msg, parent=parent)
        return
    assert msg["msg_type"] in SPEC_KEYS, msg
    assert msg["parent_header"]["msg_id"] == parent, msg
    content = msg["content"]
    assert SPEC_KEYS[msg["msg_type"]] <= set(content), msg
    if msg["msg_type"] == "clear_output":
        assert isinstance(content["wait"], bool), msg
    else:
        assert isinstance(content["comm_id"], str) and isinstance(content["data"], dict), msg


def run(kc, code, **kwargs):
    """Executes code; answers (reply, the cell's iopub messages until idle), each message validated."""
    msg_id = kc.execute(code, **kwargs)
    messages = []
    while True:
        msg = kc.get_iopub_msg(timeout=TIMEOUT)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        check(msg, msg_id)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        messages.append(msg)
    return shell_reply(kc, msg_id)["content"], messages


def shell_reply(kc, msg_id, validate=True):
    """The reply to ``msg_id``, past any other (jupyter_client asks kernel_info again while it waits for a kernel)."""
    while True:
        reply = kc.get_shell_msg(timeout=TIMEOUT)
        if reply["parent_header"].get("msg_id") == msg_id:
            if validate:
                validate_message(reply, parent=msg_id)
            return reply


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
    # A brand-new machine is nothing a person needs to be told of in the notebook.
    assert not [m for m in messages if m["msg_type"] == "stream"], messages
    machine = notebook_machine(os.path.join(NOTEBOOK_DIR, "analysis.ipynb"))["name"]
    os.kill(km.provisioner.process.pid, signal.SIGKILL)
    km.provisioner.process.wait(TIMEOUT)
    kc.stop_channels()
    km.cleanup_resources()

    km, kc = start("work/analysis.ipynb")
    _, messages = run(kc, "x + 1")
    assert value(messages) == "42", messages
    assert stderr(messages) == (
        f"[perennial] Machine {machine} is this notebook's machine: its variables, imports and functions are as the last kernel left them.\n"
    ), messages
    stop(km, kc)
    listed = {m["name"]: m for m in json.loads(cli("machine", "list", "--json"))}
    assert listed[machine]["state"] == "swapped", listed[machine]
    print("ok: a new kernel after kill -9 found x; its shutdown swapped the machine out")

    cli("stop")
    km, kc = start("work/analysis.ipynb")
    _, messages = run(kc, "double(x + 1), json.dumps([1])")
    assert value(messages) == "(84, '[1]')", messages
    stop(km, kc)
    print("ok: a new kernel after the server stopped found x, a function and an import")

    # A front end may name the notebook by its absolute path.
    other = os.path.join(NOTEBOOK_DIR, "elsewhere", "other.ipynb")
    km, kc = start(other)
    _, messages = run(kc, "'x' in dir()")
    assert value(messages) == "False", messages
    assert notebook_machine(other)["name"] != machine
    stop(km, kc)
    print("ok: another notebook has a machine of its own")


def interrupt():
    """An interrupt by message, then one by signal (Ctrl-C to the kernel process), stops the running
    cell; the state is kept."""
    km, kc = start("interrupt.ipynb")
    run(kc, "kept = 'yes'")
    for how, interrupt_kernel in (
        ("message", km.interrupt_kernel),
        ("signal", lambda: os.kill(km.provisioner.process.pid, signal.SIGINT)),
    ):
        msg_id = kc.execute("import time\nprint('looping', flush=True)\nfor _ in range(6000):\n    time.sleep(0.1)")
        while True:
            msg = kc.get_iopub_msg(timeout=TIMEOUT)
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "stream"
                and "looping" in msg["content"]["text"]
            ):
                break
        interrupt_kernel()
        reply = shell_reply(kc, msg_id)
        assert reply["content"]["status"] == "error", (how, reply)
        assert reply["content"]["ename"] == "KeyboardInterrupt", (how, reply)
        _, messages = run(kc, "kept")
        assert value(messages) == "'yes'", (how, messages)
    stop(km, kc)
    print("ok: interrupted by message and by signal, state kept")


def deleted():
    """The notebook's machine deleted while its kernel runs: the cell says so, and the next one runs
    on a new machine for the notebook, which its first output names."""
    km, kc = start("deleted.ipynb")
    run(kc, "gone = 1")
    path = os.path.join(NOTEBOOK_DIR, "deleted.ipynb")
    machine = notebook_machine(path)["name"]
    cli("machine", "rm", "--force", machine)
    reply, _ = run(kc, "gone")
    assert reply["status"] == "error" and machine in reply["evalue"], reply
    reply, messages = run(kc, "'gone' in dir()")
    assert value(messages) == "False", messages
    assert notebook_machine(path)["name"] != machine
    stop(km, kc)
    print("ok: a deleted machine is said; the next cell runs on a new machine for the notebook")


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
    # One line, the restart's: nothing else says the state came back.
    assert notes.startswith("[perennial] Restarted: a clean namespace") and notes.count("\n") == 1, notes
    checkpoint = notes.split("checkpoint ")[1].split(" ")[0]
    machine = notebook_machine(os.path.join(NOTEBOOK_DIR, "restart.ipynb"))["name"]
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
    reply = shell_reply(kc, msg_id)
    assert reply["content"]["status"] == "ok", reply
    _, messages = run(kc, "name, secret")
    assert value(messages) == "('Ada', 's3cret')", messages
    reply, messages = run(kc, "input('no stdin here')", allow_stdin=False)
    assert reply["status"] == "error" and reply["ename"] == "EOFError", reply
    stop(km, kc)
    print("ok: input() and getpass() answered through stdin; without stdin, EOFError")


def comm_message(kc, msg_type, content):
    """A front end's comm message, as a widget manager sends it; answers the iopub messages it caused."""
    msg = kc.session.msg(msg_type, content)
    kc.shell_channel.send(msg)
    messages = []
    while True:
        reply = kc.get_iopub_msg(timeout=TIMEOUT)
        if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        check(reply, msg["header"]["msg_id"])
        if reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
            return messages
        messages.append(reply)


# ipywidgets 7 and 8, vendored (Debian has 6 only): a folder of each, put first on the machine's sys.path.
VENDORED_WIDGETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vendor")


def widgets(version=None):
    """ipywidgets over comms both ways: the widget's comm opens, the front end's version
    handshake and a slider moved reach the machine, comm_info lists the comm, interact runs, and
    (ipywidgets 7 and 8) moving interact's slider updates its Output widget. ``version``: a vendored
    ipywidgets (7, 8) instead of Debian's (6)."""
    km, kc = start(f"widgets-{version or 6}.ipynb")
    if version:
        folders = [os.path.join(VENDORED_WIDGETS, f"ipywidgets{version}"), VENDORED_WIDGETS]
        run(kc, f"import sys\nsys.path[:0] = {folders!r}")
    _, messages = run(kc, "import ipywidgets as w\nslider = w.IntSlider(value=3)\ndisplay(slider)\nw.__version__")
    assert value(messages).startswith(f"'{version or 6}."), messages
    opened = [m for m in messages if m["msg_type"] == "comm_open" and m["content"]["target_name"] == "jupyter.widget"]
    # ipywidgets 6 opens a comm with the state as its data; 7 and 8 under "state".
    state = lambda content: content["data"].get("state", content["data"])  # noqa: E731
    slider = next(m["content"] for m in opened if state(m["content"])["_model_name"] == "IntSliderModel")
    assert state(slider)["value"] == 3, slider
    view = next(m["content"]["data"] for m in messages if m["msg_type"] == "display_data")
    assert view["application/vnd.jupyter.widget-view+json"]["model_id"] == slider["comm_id"], view
    assert "IntSlider" in view["text/plain"], view

    if not version:  # ipywidgets 6 checks its version with the front end's; 7 and 8 do not
        handshake = comm_message(
            kc, "comm_open", {"comm_id": "v1", "target_name": "jupyter.widget.version", "data": {}}
        )
        sent = [m["content"] for m in handshake if m["msg_type"] == "comm_msg"]
        assert sent and "version" in sent[0]["data"], handshake
        comm_message(kc, "comm_msg", {"comm_id": "v1", "data": {"validated": True}})

    # As each version's front end sends a moved slider.
    moved = (
        {"method": "update", "state": {"value": 7}, "buffer_paths": []}
        if version
        else {"method": "backbone", "sync_data": {"value": 7}}
    )
    comm_message(kc, "comm_msg", {"comm_id": slider["comm_id"], "data": moved})
    _, messages = run(kc, "slider.value")
    assert value(messages) == "7", messages

    reply = shell_reply(kc, kc.comm_info(target_name="jupyter.widget"))
    assert reply["content"]["comms"][slider["comm_id"]] == {"target_name": "jupyter.widget"}, reply

    reply, messages = run(kc, "shown = w.interact(lambda n: n * 2, n=4)")
    assert reply["status"] == "ok", reply
    if version:
        models = {
            m["content"]["comm_id"]: m["content"]["data"]["state"] for m in messages if m["msg_type"] == "comm_open"
        }
        output = next(comm for comm, state in models.items() if state["_model_name"] == "OutputModel")
        n = next(comm for comm, state in models.items() if state["_model_name"] == "IntSliderModel")
        assert outputs_text(messages, output) == "8", messages
        shown = [
            m for m in messages if m["msg_type"] == "display_data" and m["content"]["data"].get("text/plain") == "8"
        ]
        assert not shown, "interact's value is in its Output widget, not in the cell's output"
        moved = comm_message(
            kc, "comm_msg", {"comm_id": n, "data": {"method": "update", "state": {"value": 5}, "buffer_paths": []}}
        )
        assert outputs_text(moved, output) == "10", moved
    else:
        shown = [m["content"]["data"].get("text/plain") for m in messages if m["msg_type"] == "display_data"]
        assert "8" in shown, messages
    comm_message(kc, "comm_close", {"comm_id": slider["comm_id"], "data": {}})
    assert slider["comm_id"] not in shell_reply(kc, kc.comm_info(target_name="jupyter.widget"))["content"]["comms"]
    stop(km, kc)
    print(f"ok: ipywidgets {version or 6} over comms: opened, slider moved to 7, comm_info, interact, closed")


def outputs_text(messages, output):
    """The text/plain of what the last update of Output widget ``output`` among ``messages`` holds."""
    states = [
        m["content"]["data"]["state"]
        for m in messages
        if m["msg_type"] == "comm_msg"
        and m["content"]["comm_id"] == output
        and "outputs" in m["content"]["data"].get("state", {})
    ]
    assert states, messages
    return "".join(o["data"]["text/plain"] for o in states[-1]["outputs"] if o["output_type"] == "display_data")


def widgets_7():
    widgets(7)


def widgets_8():
    widgets(8)


def bad_peers():
    """What a kernel may be sent that no client should send: bytes that are not ZMTP, a message
    signed with another key, one that is not Jupyter's. It drops them and answers on."""
    import socket

    import zmq
    from jupyter_client.session import Session

    km, kc = start("bad-peers.ipynb")
    with socket.create_connection(("127.0.0.1", km.shell_port)) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n" + bytes(range(256)) * 64)
    dealer = zmq.Context.instance().socket(zmq.DEALER)
    dealer.connect(f"tcp://127.0.0.1:{km.shell_port}")
    Session(key=b"another key").send(dealer, "execute_request", {"code": "hacked = True"})
    dealer.send_multipart([b"<IDS|MSG>", b"", b"not json", b"{}", b"{}", b"{}"])
    dealer.send_multipart([b"no delimiter at all"])
    _, messages = run(kc, "'hacked' in dir(), 6 * 7")
    assert value(messages) == "(False, 42)", messages
    dealer.close(linger=0)
    stop(km, kc)
    print("ok: junk, a bad signature and a malformed message dropped; the kernel answers on")


def notebook():
    """nbclient (what papermill runs on) executes a notebook: streams, a figure as PNG, HTML, LaTeX
    and JSON, a display updated in place, a value, an error."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("print('hello from a machine')"),
        nbformat.v4.new_code_cell(
            "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()"
        ),
        nbformat.v4.new_code_cell(
            "from IPython.display import HTML, JSON, Latex, display\n"
            "display(HTML('<b>bold</b>'), Latex('$x^2$'), JSON({'a': 1}))\n"
            "handle = display('first', display_id=True)\nhandle.update('second')\n6 * 7"
        ),
        nbformat.v4.new_code_cell("1 / 0"),
    ]
    throwaway = {m["name"] for m in machines() if "jupyter-kernel" in m["tags"]}
    NotebookClient(
        nb, kernel_name=KERNEL, timeout=TIMEOUT, allow_errors=True, resources={"metadata": {"path": NOTEBOOK_DIR}}
    ).execute()
    # nbclient names no notebook: the kernel's own machine went with its shutdown.
    assert {m["name"] for m in machines() if "jupyter-kernel" in m["tags"]} == throwaway
    printed, figure, shown, failed = (cell.outputs for cell in nb.cells)
    assert any(o.output_type == "stream" and "hello from a machine" in o.text for o in printed), printed
    assert any(o.output_type == "display_data" and "image/png" in o.data for o in figure), figure
    data = [o.data for o in shown if o.output_type == "display_data"]
    assert {"text/html": "<b>bold</b>", "text/latex": "$x^2$", "application/json": {"a": 1}}.items() <= {
        k: v for d in data for k, v in d.items() if k != "text/plain"
    }.items(), data
    assert "'second'" in [d.get("text/plain") for d in data] and "'first'" not in [d.get("text/plain") for d in data], (
        data
    )
    assert any(o.output_type == "execute_result" and o.data["text/plain"] == "42" for o in shown), shown
    assert any(o.output_type == "error" and o.ename == "ZeroDivisionError" for o in failed), failed
    assert all(isinstance(cell.execution_count, int) and cell.execution_count > 0 for cell in nb.cells)
    print(
        "ok: nbclient ran the notebook: stream, image/png, text/html, text/latex, application/json, an update, execute_result, error"
    )


def ipython_look():
    """What ipykernel shows: an error's traceback as IPython formats it (coloured, the cell as In
    [n]), and a cell queued after an error answered as aborted, without a number (In [ ])."""
    km, kc = start("look.ipynb")
    run(kc, "def half(v):\n    return v / 0")
    failing = kc.execute("y = 1\nhalf(y)")
    skipped = kc.execute("print('never')")
    reply = shell_reply(kc, failing)["content"]
    assert reply["status"] == "error" and reply["ename"] == "ZeroDivisionError", reply
    shown = "\n".join(reply["traceback"])
    count = reply["execution_count"]
    assert "\x1b[" in shown and f"In [{count}], line 2" in shown and f"In [{count - 1}], line 2" in shown, shown
    assert "<cell" not in shown and "perennial_kernel" not in shown, shown
    # ipykernel's references want a number of every execute_reply, which ipykernel's own aborted one lacks.
    aborted = shell_reply(kc, skipped, validate=False)["content"]
    assert aborted == {"status": "aborted"}, aborted
    stop(km, kc)
    print("ok: an IPython traceback naming the cells by In [n]; the cell after it aborted, with no number")


# Notebooks as people write them, beside their data: each is run through nbclient on ipykernel
# (Debian's, kernel "python3") and on Perennial's kernel, which must give the same outputs. No
# widget: Debian's ipywidgets (6) opens comms in a form nbclient refuses on either kernel.
REAL_NOTEBOOKS = {
    "sales": [
        "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.head(3)",
        "total = df['amount'].sum()\nprint(f'total: {total}')",
        "by_region = df.groupby('region')['amount'].sum()\nby_region.to_csv('by_region.csv')\nopen('by_region.csv').read()",
        "%matplotlib inline\nimport matplotlib.pyplot as plt\ndf.plot(x='month', y='amount')\nplt.show()",
        "from IPython.display import HTML, display\ndisplay(HTML('<h3>Done</h3>'))\nlen(df)",
        "df['missing']",
        "print('after the error')",
    ],
    "tools": [
        "from helpers import clean\nclean('  Lyon ')",
        "import sys\nprint('to stderr', file=sys.stderr)\nsquares = [i ** 2 for i in range(6)]\nsquares",
        "!head -n 2 sales.csv",
        "from IPython.display import Markdown, display\ndisplay(Markdown('**bold**'))\n{'a': [1, 2], 'b': None}",
        "def ratio(a, b):\n    return a / b\nratio(1, 0)",
    ],
}


def comparable(cell):
    """A cell's outputs in the terms two kernels must agree on: streams, values, displays'
    text, errors, figures; object addresses masked."""

    def text(data):
        plain = data.get("text/plain", "")
        return re.sub(r"0x[0-9a-f]+", "0x…", plain)

    shown = []
    for output in cell.outputs:
        kind = output.output_type
        if kind == "stream":
            if shown and shown[-1][0] == output.name:  # how text is cut into messages is the kernel's
                shown[-1] = (output.name, shown[-1][1] + output.text)
            else:
                shown.append((output.name, output.text))
        elif kind == "error":
            shown.append(("error", output.ename, output.evalue))
        elif any(mime.startswith("image/") for mime in output.data):
            shown.append(("figure",))
        else:
            shown.append((kind, text(output.data), sorted(output.data)))
    return shown


def real_notebooks():
    """The notebooks above, through nbclient on ipykernel and on Perennial's kernel, in a folder
    with their data: the same outputs, cell by cell."""
    folder = tempfile.mkdtemp(prefix="real-", dir=NOTEBOOK_DIR)
    with open(os.path.join(folder, "sales.csv"), "w") as f:
        f.write("month,region,amount\n1,north,120\n2,south,80\n3,north,95\n4,east,130\n")
    with open(os.path.join(folder, "helpers.py"), "w") as f:
        f.write("def clean(text):\n    return text.strip().upper()\n")
    for name, sources in REAL_NOTEBOOKS.items():
        runs = {}
        for kernel in ("python3", KERNEL):
            nb = nbformat.v4.new_notebook()
            nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
            NotebookClient(
                nb, kernel_name=kernel, timeout=TIMEOUT, allow_errors=True, resources={"metadata": {"path": folder}}
            ).execute()
            runs[kernel] = [comparable(cell) for cell in nb.cells]
        for index, (theirs, ours) in enumerate(zip(runs["python3"], runs[KERNEL])):
            assert theirs == ours, f"{name}, cell {index}: ipykernel {theirs!r}, Perennial {ours!r}"
        print(f"ok: {name}.ipynb gave the same outputs on ipykernel and on Perennial, cell by cell")


class JupyterServer:
    """A jupyter_server with Perennial's kernels, driven through its REST API as front ends drive
    it: sessions for notebooks (which start their kernels), contents saved, renamed and copied.
    The cells run through a kernel client on the kernel's connection file."""

    def __init__(self, root):
        self.root = root
        self.token = secrets.token_hex(8)
        self.runtime = tempfile.mkdtemp(prefix="jupyter-runtime-")
        self.process = None
        # The server's log, its kernels' stderr with it: what a failed scenario shows.
        self.log = open(os.path.join(self.runtime, "server.log"), "ab")

    def logged(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()[-6000:]

    def start(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": self.runtime, "JUPYTER_CONFIG_DIR": self.runtime}
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--allow-root",
                f"--port={self.port}",
                "--ip=127.0.0.1",
                f"--ServerApp.token={self.token}",
                f"--ServerApp.root_dir={self.root}",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                self.api("GET", "status")
                return self
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline and self.process.poll() is None, "jupyter_server did not start"
                time.sleep(0.2)

    def stop(self):
        """As Ctrl-C twice would: the server shuts its kernels down, then exits."""
        self.process.terminate()
        self.process.wait(TIMEOUT)

    def api(self, method, path, body=None):
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/api/{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            text = answer.read()
            return json.loads(text) if text else None

    def open(self, path, kernel):
        """A session for the notebook at ``path`` (from the root): its kernel, and a client of it."""
        session = self.api(
            "POST", "sessions", {"path": path, "name": path, "type": "notebook", "kernel": {"name": kernel}}
        )
        kernel_id = session["kernel"]["id"]
        kc = BlockingKernelClient(connection_file=os.path.join(self.runtime, f"kernel-{kernel_id}.json"))
        kc.load_connection_file()
        kc.start_channels()
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                kc.wait_for_ready(timeout=TIMEOUT)
                return kernel_id, kc
            except RuntimeError:
                # A client no KernelManager made judges the kernel by its heartbeat, which a kernel
                # still starting on a loaded machine misses by a second: judged by its process here.
                if time.monotonic() > deadline or kernel_pid(kernel_id) is None:
                    raise

    def save(self, path, cells):
        """Saves the notebook as a front end does: each cell with its source and the In [n] it ran as."""
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(code, execution_count=count) for code, count in cells]
        self.api(
            "PUT",
            f"contents/{path}",
            {"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))},
        )


def kernel_pid(kernel_id):
    """The process of the kernel Jupyter started with this id (its connection file names it)."""
    found = subprocess.run(["pgrep", "-f", f"kernel-{kernel_id}.json"], capture_output=True, text=True)
    return int(found.stdout.split()[0]) if found.stdout.strip() else None


def where_people_work(kernel):
    """A notebook beside its data, through jupyter_server as front ends use it: the cells read the
    CSV beside the notebook, write one beside it and import a module from its folder; after a kill
    -9 of the kernel and a restart of Jupyter both still hold; renamed (jupyter_server's rename),
    the notebook keeps its machine after the server restarts; a copy gets a fork of it."""
    root = tempfile.mkdtemp(prefix="people-", dir=NOTEBOOK_DIR)
    project = os.path.join(root, "project")
    os.mkdir(project)
    with open(os.path.join(project, "data.csv"), "w") as f:
        f.write("city,people\nLyon,522\nNantes,320\n")
    with open(os.path.join(project, "helpers.py"), "w") as f:
        f.write("def total(rows):\n    return sum(int(r['people']) for r in rows)\n")
    server = JupyterServer(root).start()
    cells = [
        "import csv, os, helpers\nrows = list(csv.DictReader(open('data.csv')))\nhelpers.total(rows)",
        "with open('out.csv', 'w') as f:\n    f.write('total\\n%d\\n' % helpers.total(rows))\nos.getcwd()",
    ]
    try:
        kernel_id, kc = server.open("project/analysis.ipynb", kernel)
        ran = []
        for code in cells:
            reply, messages = run(kc, code)
            assert reply["status"] == "ok", (reply, messages)
            ran.append((code, reply["execution_count"]))
        assert value(messages) == repr(project), messages
        with open(os.path.join(project, "out.csv")) as f:
            assert f.read() == "total\n842\n"
        server.save("project/analysis.ipynb", ran)
        machine = notebook_machine(os.path.join(project, "analysis.ipynb"))
        assert machine["workdir"] == project, machine
        os.kill(kernel_pid(kernel_id), signal.SIGKILL)
        kc.stop_channels()
        server.stop()
        print(f"ok: the cells read data.csv beside the notebook and wrote out.csv there ({kernel})")

        server.start()
        _, kc = server.open("project/analysis.ipynb", kernel)
        _, messages = run(kc, f"helpers.total(rows), open('out.csv').read(), os.getcwd() == {project!r}")
        assert value(messages) == "(842, 'total\\n842\\n', True)", messages
        kc.stop_channels()
        print("ok: after a kill -9 of the kernel and a restart of Jupyter, the state and the files hold")

        server.api("PATCH", "contents/project/analysis.ipynb", {"path": "project/renamed.ipynb"})
        server.stop()
        server.start()
        _, kc = server.open("project/renamed.ipynb", kernel)
        _, messages = run(kc, "helpers.total(rows)")
        assert value(messages) == "842", messages
        assert stderr(messages) == (
            f"[perennial] This notebook was {os.path.join(project, 'analysis.ipynb')}: its machine {machine['name']} came with it, "
            f"with its variables, imports and functions as the last kernel left them, and works in {project}.\n"
        ), messages
        renamed = notebook_machine(os.path.join(project, "renamed.ipynb"))
        assert renamed["name"] == machine["name"], (renamed, machine)
        kc.stop_channels()
        print("ok: renamed through jupyter_server, the notebook kept its machine after the server restarted")

        copied = server.api("POST", "contents/project", {"copy_from": "project/renamed.ipynb"})["path"]
        _, kc = server.open(copied, kernel)
        _, messages = run(kc, "only_in_the_copy = 1\nhelpers.total(rows)")
        assert value(messages) == "842", messages
        assert "is a copy of" in stderr(messages), messages
        fork = notebook_machine(os.path.join(root, copied))
        assert fork["name"] != machine["name"] and fork["tags"]["forked_from"] == machine["name"], fork
        kc.stop_channels()
        _, kc = server.open("project/renamed.ipynb", kernel)
        _, messages = run(kc, "'only_in_the_copy' in dir()")
        assert value(messages) == "False", messages
        kc.stop_channels()
        print("ok: a copy of the notebook got a fork of its machine; the original's is its own")
    except BaseException:
        print(f"jupyter_server's log:\n{server.logged()}", file=sys.stderr)
        raise
    finally:
        if server.process.poll() is None:
            server.stop()


def python_engine_folder():
    where_people_work(KERNEL)


def sandbox_engine_folder():
    where_people_work(SANDBOX_KERNEL)


def other_engine():
    """Choosing a kernelspec of another engine gives the notebook a machine of that kind; its
    first output says so, and that the other machine still holds the earlier state."""
    km, kc = start("two-kinds.ipynb")
    run(kc, "kind = 'python'")
    first = notebook_machine(os.path.join(NOTEBOOK_DIR, "two-kinds.ipynb"))
    stop(km, kc)
    km, kc = start("two-kinds.ipynb", kernel=SANDBOX_KERNEL)
    _, messages = run(kc, "'kind' in dir()")
    assert value(messages) == "False", messages
    assert f"machine {first['name']} (python engine) still holds its earlier state" in stderr(messages), messages
    stop(km, kc)
    km, kc = start("two-kinds.ipynb")
    _, messages = run(kc, "kind")
    assert value(messages) == "'python'", messages
    stop(km, kc)
    print("ok: another engine's kernelspec gave the notebook a machine of that engine; the first kept its state")


def on_a_team_server():
    """A kernelspec of a team's server (perennial --server URL kernel install): the notebook's
    machine is the person's there, in the sandbox, working in a folder of its own (the notebook's
    is on this computer); a new kernel for the notebook finds its state."""
    kernel, server = os.environ["PERENNIAL_TEAM_KERNEL_NAME"], os.environ["PERENNIAL_TEAM_SERVER"]
    km, kc = start("on-the-team.ipynb", kernel=kernel)
    run(kc, "import os\nx = 6 * 7")
    _, messages = run(kc, "os.getcwd()")
    assert value(messages) != repr(NOTEBOOK_DIR), messages
    stop(km, kc)
    km, kc = start("on-the-team.ipynb", kernel=kernel)
    _, messages = run(kc, "x")
    assert value(messages) == "42", messages
    stop(km, kc)
    path = os.path.join(NOTEBOOK_DIR, "on-the-team.ipynb")
    found = json.loads(cli("--server", server, "machine", "list", "--json", f"--tag=jupyter-notebook={path}"))
    assert len(found) == 1, found
    machine = found[0]
    assert machine["engine"] == "sandbox" and "workdir" not in machine, machine
    print(
        f"ok: the notebook's machine {machine['name']} is {machine['access']['owner']}'s on the team's server, and kept x"
    )


if __name__ == "__main__":
    globals()[sys.argv[1]]()
