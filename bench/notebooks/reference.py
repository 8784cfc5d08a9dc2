"""Runs notebooks under Jupyter (ipykernel through nbclient) and writes to OUT_DIR/cells.jsonl, one
JSON object per notebook and line, what each code cell gave: the reference `npm run bench -- notebooks` compares
Perennial with. Run with the interpreter whose ipykernel is the reference (Debian's python3).

    python3 reference.py OUT_DIR NOTEBOOK...

Each notebook runs in a fresh kernel whose working folder is a new empty folder under OUT_DIR, as
the Perennial run's machine is, so neither side sees files the other does not. Not stdout: native
code in a kernel (scipy's Fortran) writes to the file descriptor it inherits.
"""

import json
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

CELL_TIMEOUT_S = 300


def summary(outputs):
    """What a cell showed, in the terms the bench compares (see notebooks.ts)."""
    streams = {"stdout": "", "stderr": ""}
    value = None
    error = None
    figures = 0
    html = False
    displayed = []
    for out in outputs:
        kind = out["output_type"]
        if kind == "stream":
            streams[out["name"]] += out["text"]
        elif kind == "error":
            error = {"ename": out["ename"], "evalue": out["evalue"]}
        else:
            data = out.get("data", {})
            figures += "image/png" in data
            html = html or "text/html" in data
            if kind == "execute_result":
                value = data.get("text/plain")
            elif "image/png" not in data and "text/plain" in data:
                displayed.append(data["text/plain"])
    return {
        "stdout": streams["stdout"],
        "stderr": streams["stderr"],
        "value": value,
        "error": error,
        "figures": figures,
        "html": html,
        "displayed": displayed,
    }


def run(path, out_dir):
    nb = nbformat.read(path, as_version=4)
    work = os.path.join(out_dir, "work-" + os.path.basename(path))
    os.makedirs(work, exist_ok=True)
    client = NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": work}}
    )
    started = time.monotonic()
    failure = None
    try:
        client.execute()
    except Exception as exc:  # a timeout or a dead kernel: the cells after it did not run
        failure = f"{type(exc).__name__}: {exc}".splitlines()[0]
    cells = [
        {"source": "".join(c.source), "ran": c.get("execution_count") is not None, **summary(c.get("outputs", []))}
        for c in nb.cells
        if c.cell_type == "code"
    ]
    return {
        "notebook": os.path.basename(path),
        "seconds": round(time.monotonic() - started, 1),
        "failure": failure,
        "cells": cells,
    }


if __name__ == "__main__":
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "cells.jsonl"), "w") as out:
        for notebook in sys.argv[2:]:
            out.write(json.dumps(run(notebook, out_dir)) + "\n")
            out.flush()
