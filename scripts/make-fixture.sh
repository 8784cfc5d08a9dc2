#!/usr/bin/env bash
# Fixtures made by an earlier build of Perennial, for the upgrade tests. Builds COMMIT in a git
# worktree, then:
#   data-dir  writes test/fixtures/data-dirs/<name>/: a data dir that build made, with machines of
#             both engines, a checkpoint and a fork (test/fixtures/data-dirs/write-fixture.ts).
#             Add one whenever an on-disk format changes.
#   build     keeps test/fixtures/builds/<name>/: the build's bundled CLI, sandbox process and
#             kernel, for tests where its server runs beside this one. Its Pyodide resolves to the
#             npm alias of the version it pinned (its node_modules/pyodide link).
# Usage: scripts/make-fixture.sh data-dir|build COMMIT [NAME]    (NAME defaults to the short commit)
set -euo pipefail
kind=${1:?usage: make-fixture.sh data-dir|build COMMIT [NAME]}
commit=$(git rev-parse --verify "${2:?usage: make-fixture.sh data-dir|build COMMIT [NAME]}^{commit}")
name=${3:-$(git rev-parse --short=7 "$commit")}
root=$(git rev-parse --show-toplevel)
case "$kind" in data-dir | build) ;; *) echo "unknown kind $kind: data-dir or build" >&2; exit 2 ;; esac

work=$(mktemp -d)
cleanup() {
  git -C "$root" worktree remove --force "$work/build" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$work/build" "$commit" >/dev/null
(cd "$work/build" && npm ci --no-audit --no-fund >/dev/null && npm run build >/dev/null)
cd "$root"

if [ "$kind" = data-dir ]; then
  node --import tsx test/fixtures/data-dirs/write-fixture.ts --cli "$work/build/dist/cli.js" --commit "$commit" --out "test/fixtures/data-dirs/$name"
  exit
fi
pinned=$(node -p 'require(process.argv[1]).dependencies.pyodide' "$work/build/package.json")
# The Pyodide this build ships itself, or the npm alias of an earlier one.
if [ "$pinned" = "$(node -p 'require("./package.json").dependencies.pyodide')" ]; then alias=pyodide; else alias="pyodide-${pinned%.*}"; fi
[ -d "node_modules/$alias" ] || { echo "package.json has no npm alias $alias for Pyodide $pinned" >&2; exit 1; }
out="test/fixtures/builds/$name"
rm -rf "$out"
mkdir -p "$out/dist/sandbox" "$out/node_modules"
# The CLI and the chunks it loads when it needs them (a cluster node's among them).
cp "$work/build/dist/"*.js "$out/dist/"
# The kernel: one module in builds before it became a package.
if [ -d "$work/build/dist/perennial_kernel" ]; then
  mkdir "$out/dist/perennial_kernel" && cp "$work/build/dist/perennial_kernel/"*.py "$out/dist/perennial_kernel/"
else
  cp "$work/build/dist/perennial_kernel.py" "$out/dist/"
fi
# The sandbox process (and, from issue 52, its patch thread); not the base image it may ship, which
# a fixture's data dir holds already.
cp "$work/build/dist/sandbox/"*.js "$out/dist/sandbox/"
ln -s "../../../../../node_modules/$alias" "$out/node_modules/pyodide"
echo "$commit" > "$out/COMMIT"
echo "$out: the build of $commit (Pyodide $pinned through $alias)"
