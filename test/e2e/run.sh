#!/usr/bin/env bash
# The extension's end-to-end tests: installs a real VS Code once (into .cache/vscode), runs the
# suite inside it, then packages the .vsix and checks it as a user would install it.
# Expects a build (npm run build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
paths=$(bash "$root/test/e2e/setup-vscode.sh" "$root/.cache/vscode" | grep -E '^CS_(NODE|ENTRY)=')
export $paths
node "$root/test/e2e/run-vscode.mjs"
node "$root/scripts/package.mjs" | tail -n 2
vsix=$(node -p "const p = require('$root/package.json'); p.name + '-' + p.version + '.vsix'")
node "$root/test/e2e/check-vsix.mjs" "$root/$vsix"
