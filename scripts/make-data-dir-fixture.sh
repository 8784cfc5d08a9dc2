#!/usr/bin/env bash
# Writes test/fixtures/data-dirs/<name>/: a data dir made by the build of COMMIT (see
# test/fixtures/data-dirs/write-fixture.ts). Add one whenever an on-disk format changes.
#   scripts/make-data-dir-fixture.sh COMMIT [NAME]     (NAME defaults to the short commit)
set -euo pipefail
commit=$(git rev-parse --verify "${1:?usage: make-data-dir-fixture.sh COMMIT [NAME]}^{commit}")
name=${2:-$(git rev-parse --short=7 "$commit")}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
cleanup() {
  git -C "$root" worktree remove --force "$work/build" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$work/build" "$commit" >/dev/null
(cd "$work/build" && npm ci --no-audit --no-fund >/dev/null && npm run build >/dev/null)
cd "$root"
node --import tsx test/fixtures/data-dirs/write-fixture.ts --cli "$work/build/dist/cli.js" --commit "$commit" --out "test/fixtures/data-dirs/$name"
