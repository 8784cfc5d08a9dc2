#!/usr/bin/env bash
# The tests of the server, both engines, snapshots, the CLI and the package, on the Node lines
# users run besides the one `npm test` itself runs on: Node 22 (VS Code's extension host, which
# starts the server, from VS Code 1.101) and Node 24 (the current LTS, which most CLI users have).
# Each line runs the unit tests, the sandbox's suites (its child processes' permission flags differ
# from line to line) and a share of the others: the server's and the engines' on Node 22, the
# CLI's, the formats' and the package's on Node 24. Every suite runs on npm test's own line too;
# the MCP, REPL-terminal, notebook and Jupyter suites only there: they exercise Perennial's own
# protocol code more than the runtime, and more runs would not fit CI's time.
# Node builds from the npm registry, cached in .cache/node. PERENNIAL_NODE_LINES names others
# (each then runs every suite named here).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
both=(sandbox-engine sandbox-security)
declare -A share=(
  [22]="server-api client execution persistence interrupts bad-input"
  [24]="cli checkpoints state-kinds npm-package"
)
for version in ${PERENNIAL_NODE_LINES:-22.23.3 24.21.0}; do
  node=$(bash scripts/node-line.sh "$version" .cache/node)
  # A line named in PERENNIAL_NODE_LINES runs every share.
  names=${PERENNIAL_NODE_LINES:+${share[22]} ${share[24]}}
  names=${names:-${share[${version%%.*}]-}}
  tests=(test/unit/*.test.ts)
  for name in "${both[@]}" $names; do tests+=("test/integration/$name.test.ts"); done
  echo "== Node $version: ${#tests[@]} test files"
  # First on PATH: what the tests start by name (`perennial`, npm) runs on this line too.
  PATH="$(dirname "$node"):$PATH" PERENNIAL_OTHER_NODE_LINE=1 "$node" --import tsx --test --test-reporter=spec --test-concurrency=4 "${tests[@]}"
done
