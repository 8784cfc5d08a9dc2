#!/usr/bin/env bash
# Installs what the test suite needs from Debian: the python engine tests run Debian's python3 with
# numpy, pandas, matplotlib, dill and IPython (with the IPython extensions line_profiler and
# memory_profiler), and make virtual environments of it (venv); the sandbox tests need bubblewrap;
# the cluster tests start PostgreSQL servers of their own; the Jupyter kernel's tests drive it with
# Jupyter's own clients (jupyter_client, nbclient, and ipykernel's message-spec suite under
# pytest), ipywidgets over its comms, and a notebook in Jupyter's classic front end (nbclassic on
# jupyter_server); Node 26's Linux build, which the Node lines' tests run, needs libatomic. Does
# nothing when they are already there.
set -euo pipefail
python=${PERENNIAL_TEST_PYTHON:-/usr/bin/python3}
installed() { ! command -v dpkg >/dev/null || dpkg -s "$1" >/dev/null 2>&1; }
postgres_ready() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null; }
if "$python" -c 'import numpy, pandas, matplotlib, dill, IPython, jupyter_client, nbclient, ipykernel, pytest, ipywidgets, nbclassic, line_profiler, memory_profiler' 2>/dev/null && command -v bwrap >/dev/null && installed python3-venv && installed libatomic1 && postgres_ready; then
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
packages="python3 python3-numpy python3-pandas python3-matplotlib python3-dill python3-ipython python3-venv bubblewrap postgresql python3-jupyter-client python3-nbclient python3-nbformat python3-ipykernel python3-pytest python3-ipywidgets python3-jupyter-server python3-nbclassic python3-line-profiler python3-memory-profiler libatomic1"
echo "Installing Debian packages for the tests: $packages" >&2
$sudo apt-get update -qq
# shellcheck disable=SC2086 # the list is words
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $packages >/dev/null
