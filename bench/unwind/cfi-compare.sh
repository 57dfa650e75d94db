#!/usr/bin/env bash
# bench/unwind/cfi-compare.sh [BUILD_DIR] [PATH...] — the CFI-to-rows translator
# (daemon/cfi-rows.c) against libdw's builder on every row of every ELF object under each PATH
# (default: /usr/lib/<triplet> and /usr/bin), and the CPU each builder took on the objects the
# translator builds (tests/cfi-compare-main.c, built in BUILD_DIR as tests/cfi-compare;
# default build/). Exit 0 when no row differs; differences are printed one a line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build=$root/$build
shift || true
paths=("$@")
if [[ ${#paths[@]} -eq 0 ]]; then
    paths=("/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" /usr/bin)
fi
ninja -C "$build" tests/cfi-compare >&2
"$build/tests/cfi-compare" --full "${paths[@]}" | grep -v ': left to libdw$'
