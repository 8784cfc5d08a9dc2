#!/usr/bin/env bash
# The end-to-end tests: the MCP App view and a Jupyter notebook in headless Chromium; then the extension's, which install a
# real VS Code once (into .cache/vscode), run the suite inside it, package the .vsix and check it
# as a user would install it.
# Expects a build (npm run build).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
paths=$(bash "$root/test/e2e/setup-vscode.sh" "$root/.cache/vscode" | grep -E '^CS_(NODE|ENTRY)=')
export $paths
# The MCP App view in a host built on the SDK's app bridge, and a notebook in Jupyter's classic
# front end (Chromium from the setup above).
(cd "$root" && node --import tsx --test --test-reporter=spec test/e2e/mcp-app.test.ts test/e2e/jupyter-notebook.test.ts)
node "$root/test/e2e/run-vscode.mjs"
node "$root/scripts/package.mjs" | tail -n 2
vsix=$(node -p "const p = require('$root/package.json'); p.name + '-' + p.version + '.vsix'")
node "$root/test/e2e/check-vsix.mjs" "$root/$vsix"
