#!/usr/bin/env bash
# The .deb of the previous release, for `make package-test`'s upgrade check:
# built once from its commit with that commit's own `tools/package.sh`, and
# kept under the target dir. Prints the path of the .deb.
#
# The build runs in a git worktree with a target dir of its own, seeded with
# a copy of this tree's release build so that only Carrel's own crates are
# compiled again (a few minutes rather than the 15 of a cold release build);
# the seed is removed afterwards and only the .deb is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$repo/$target" ;; esac

# Carrel 0.1.0, the first commit `make package` could build.
release=0.1.0
commit=29549e27e030d265c4ec6d7b91c283f8a52462fe

kept="$target/package-previous/Carrel_${release}_${commit:0:12}_amd64.deb"
if [ -f "$kept" ]; then
  echo "$kept"
  exit 0
fi

work="$target/package-previous/work"
tree="$work/src"
rm -rf "$work"
git worktree prune
mkdir -p "$work"
trap 'git -C "$repo" worktree remove --force "$tree" 2>/dev/null || true; rm -rf "$work"' EXIT
git worktree add --quiet --detach "$tree" "$commit" >&2
if [ -d "$target/release" ]; then
  mkdir -p "$work/target"
  cp -a "$target/release" "$work/target/release"
  rm -rf "$work/target/release/bundle"
fi
# The front end of that commit, built with this tree's node_modules (the
# lockfile is the same one).
ln -s "$repo/ui/node_modules" "$tree/ui/node_modules"
(cd "$tree/ui" && npm run build >&2)
(cd "$tree" && CARGO_TARGET_DIR="$work/target" ./tools/package.sh >&2)
built=$(ls "$work"/target/release/bundle/deb/Carrel_"$release"_*.deb)
mv "$built" "$kept"
echo "$kept"
