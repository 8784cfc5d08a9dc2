#!/usr/bin/env bash
# Installs what the test suite needs from Debian: the python engine tests run Debian's python3 with
# numpy, pandas, matplotlib and dill; the sandbox tests need bubblewrap. Does nothing when they are
# already there.
set -euo pipefail
python=${PERENNIAL_TEST_PYTHON:-/usr/bin/python3}
if "$python" -c 'import numpy, pandas, matplotlib, dill' 2>/dev/null && command -v bwrap >/dev/null; then
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
echo "Installing Debian packages for the tests: python3-numpy python3-pandas python3-matplotlib python3-dill bubblewrap" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3 python3-numpy python3-pandas python3-matplotlib python3-dill bubblewrap >/dev/null
