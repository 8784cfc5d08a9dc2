#!/usr/bin/env bash
# Writes test/fixtures/builds/<name>/: the runnable part of the build of COMMIT (its bundled CLI,
# sandbox process and kernel), for tests where an earlier build's server runs beside this one.
# Its Pyodide resolves to the npm alias of the version it pinned (node_modules/pyodide there).
#   scripts/make-build-fixture.sh COMMIT [NAME]     (NAME defaults to the short commit)
set -euo pipefail
commit=$(git rev-parse --verify "${1:?usage: make-build-fixture.sh COMMIT [NAME]}^{commit}")
name=${2:-$(git rev-parse --short=7 "$commit")}
root=$(git rev-parse --show-toplevel)
pinned=$(git show "$commit:package.json" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).dependencies.pyodide))')
alias="pyodide-${pinned%.*}"
[ -d "$root/node_modules/$alias" ] || { echo "no npm alias $alias for Pyodide $pinned in package.json" >&2; exit 1; }
work=$(mktemp -d)
cleanup() {
  git -C "$root" worktree remove --force "$work/build" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$work/build" "$commit" >/dev/null
(cd "$work/build" && npm ci --no-audit --no-fund >/dev/null && npm run build >/dev/null)
out="$root/test/fixtures/builds/$name"
rm -rf "$out"
mkdir -p "$out/dist/sandbox" "$out/node_modules"
cp "$work/build/dist/cli.js" "$work/build/dist/perennial_kernel.py" "$out/dist/"
cp "$work/build/dist/sandbox/main.js" "$out/dist/sandbox/"
ln -s "../../../../../node_modules/$alias" "$out/node_modules/pyodide"
echo "$commit" > "$out/COMMIT"
echo "test/fixtures/builds/$name: the build of $commit (Pyodide $pinned through $alias)"
