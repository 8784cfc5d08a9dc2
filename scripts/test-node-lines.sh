#!/usr/bin/env bash
# The tests of the server, both engines, snapshots, the CLI and the package, on the Node lines
# users run besides the one `npm test` itself runs on: Node 22 (VS Code's extension host, which
# starts the server, from VS Code 1.101) and Node 24 (the current LTS, which most CLI users have).
# The MCP, REPL-terminal and notebook suites run in `npm test`'s own run only: they exercise Perennial's
# own protocol code more than the runtime, and three full runs would not fit CI's time.
# Node builds from the npm registry, cached in .cache/node. PERENNIAL_NODE_LINES names others.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tests=(test/unit/*.test.ts)
for name in server-api bad-input client cli execution persistence interrupts checkpoints state-kinds \
  sandbox-engine sandbox-security upgrade-fixtures npm-package; do
  tests+=("test/integration/$name.test.ts")
done
for version in ${PERENNIAL_NODE_LINES:-22.23.3 24.21.0}; do
  node=$(bash scripts/node-line.sh "$version" .cache/node)
  echo "== Node $version: ${#tests[@]} test files"
  # First on PATH: what the tests start by name (`perennial`, npm) runs on this line too.
  PATH="$(dirname "$node"):$PATH" PERENNIAL_OTHER_NODE_LINE=1 "$node" --import tsx --test --test-reporter=spec --test-concurrency=4 "${tests[@]}"
done
