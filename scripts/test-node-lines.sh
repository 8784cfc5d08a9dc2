#!/usr/bin/env bash
# What depends on the runtime, on the Node lines users run besides the one `npm test` itself
# runs on: Node 22 (VS Code's extension host, which starts the server, from VS Code 1.101), Node
# 24 (VS Code's now: 1.141 runs Electron 43 with Node 24.21) and Node 26 (the active LTS, what a
# person who installs Node today gets). Each line runs the unit tests and the sandbox's lockdown
# (the permission model's flags differ from line to line: Node 25 put the network under it);
# Node 22 the server's API, the client (HTTP, WebSocket, fetch) and both engines' execution and
# interrupts (child processes, pipes, WebAssembly); Node 24 the sandbox engine, the CLI and the
# package; Node 26 every sandbox suite (the engine, its packages). Every suite runs on npm test's
# own line; more runs here did not fit CI's 20 minutes (the whole CI is bound by this computer's
# two cores).
# Node builds from the npm registry, cached in .cache/node. PERENNIAL_NODE_LINES names others
# (each then runs every suite named here).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
every=(sandbox-security)
declare -A share=(
  [22]="server-api client execution interrupts"
  [24]="sandbox-engine cli npm-package"
  [26]="sandbox-engine sandbox-packages"
)
for version in ${PERENNIAL_NODE_LINES:-22.23.3 24.21.0 26.12.1}; do
  node=$(bash scripts/node-line.sh "$version" .cache/node)
  # A line named in PERENNIAL_NODE_LINES runs every share.
  # shellcheck disable=SC2068 # the shares are words
  names=${PERENNIAL_NODE_LINES:+$(printf '%s\n' ${share[@]} | sort -u)}
  names=${names:-${share[${version%%.*}]-}}
  tests=(test/unit/*.test.ts)
  for name in "${every[@]}" $names; do tests+=("test/integration/$name.test.ts"); done
  echo "== Node $version: ${#tests[@]} test files"
  # First on PATH: what the tests start by name (`perennial`, npm) runs on this line too.
  PATH="$(dirname "$node"):$PATH" PERENNIAL_OTHER_NODE_LINE=1 "$node" --import tsx --test --test-reporter=spec --test-concurrency=6 "${tests[@]}"
done
