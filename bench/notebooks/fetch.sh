#!/usr/bin/env bash
# Fetches the notebook corpus for `npm run bench -- notebooks` from Debian: the example notebooks
# statsmodels and pandas ship in their -doc packages (public, written by those projects, runnable
# offline on the datasets statsmodels bundles), and the packages that run them under Jupyter
# (ipykernel, nbclient) and Perennial. The notebooks land in .cache/notebook-corpus/, never in git.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
corpus="$root/.cache/notebook-corpus"
sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
packages="python3-numpy python3-pandas python3-matplotlib python3-statsmodels python3-seaborn python3-ipython python3-ipykernel python3-nbclient python3-nbformat"
if ! /usr/bin/python3 -c 'import statsmodels, seaborn, IPython, ipykernel, nbclient' 2>/dev/null; then
  echo "Installing Debian packages for the notebook bench: $packages" >&2
  $sudo apt-get update -qq
  # shellcheck disable=SC2086 # the list is words
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $packages >/dev/null
fi
rm -rf "$corpus" && mkdir -p "$corpus/debs" "$corpus/notebooks"
cd "$corpus/debs"
apt-get download -qq python-statsmodels-doc python-pandas-doc 2>/dev/null
for deb in *.deb; do dpkg-deb -x "$deb" "$corpus/unpacked"; done
docs="$corpus/unpacked/usr/share/doc"
cp "$docs"/python-statsmodels-doc/examples/notebooks/*.ipynb "$corpus/notebooks/"
cp "$docs/python-pandas-doc/html/_sources/user_guide/style.ipynb.txt" "$corpus/notebooks/pandas-style.ipynb"
rm -rf "$corpus/unpacked"
{
  echo "Notebook corpus, fetched $(date -u +%Y-%m-%dT%H:%MZ) from Debian:"
  for deb in *.deb; do dpkg-deb -f "$deb" Package Version | paste -sd' '; done
} > "$corpus/SOURCE"
echo "$(ls "$corpus/notebooks" | wc -l) notebooks in $corpus/notebooks" >&2
