#!/usr/bin/env bash
# version.sh BASE — Osprey's version, the one place it comes from (meson.build runs this for
# the pkg-config file, common/meson.build through vcs_tag for the binaries and the outputs).
# In a git tree: `git describe` of the last release tag vX.Y.Z (1.2.0, or 1.2.0-3-gabc1234
# three commits after it, -dirty with uncommitted changes); before the first tag, BASE (meson's
# project version) and the commits since the start in describe's form, 0.1.0-535-g14f097d.
# Outside git (a tarball): BASE.
set -uo pipefail
base=${1:?usage: version.sh BASE}
cd "$(dirname "$0")/.." || exit 1
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  [ "$(git rev-parse --show-toplevel 2>/dev/null)" != "$(pwd -P)" ]; then
  echo "$base"
  exit 0
fi
if v=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
  echo "${v#v}"
  exit 0
fi
dirty=
git diff --quiet HEAD -- 2>/dev/null || dirty=-dirty
echo "$base-$(git rev-list --count HEAD)-g$(git rev-parse --short HEAD)$dirty"
