#!/usr/bin/env bash
# Configure (once) and build everything into build/. Extra arguments go to `meson setup`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build "$@" >/dev/null
fi
ninja -C build >/dev/null
