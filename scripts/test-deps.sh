#!/usr/bin/env bash
# Installs what the test suite needs from Debian: the python engine tests run Debian's python3 with
# numpy, pandas, matplotlib, dill and IPython; the sandbox tests need bubblewrap. Does nothing when
# they are already there.
set -euo pipefail
python=${PERENNIAL_TEST_PYTHON:-/usr/bin/python3}
if "$python" -c 'import numpy, pandas, matplotlib, dill, IPython' 2>/dev/null && command -v bwrap >/dev/null; then
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
packages="python3 python3-numpy python3-pandas python3-matplotlib python3-dill python3-ipython bubblewrap"
echo "Installing Debian packages for the tests: $packages" >&2
$sudo apt-get update -qq
# shellcheck disable=SC2086 # the list is words
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $packages >/dev/null
