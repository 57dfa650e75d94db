#!/usr/bin/env bash
# bench/unwind/cfi-compare.sh BUILD_DIR [PATH...] — the CFI-to-rows translator
# (daemon/cfi-rows.c) against libdw's builder on every row of every ELF object under each PATH
# (default: /usr/lib/<triplet> and /usr/bin), and the CPU each builder took on the objects the
# translator builds (tests/cfi-compare-main.c, built in BUILD_DIR as tests/cfi-compare).
# Exit 0 when no row differs; differences are printed one a line.
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [PATH...]" >&2; exit 2; }
compare=$(realpath "$1")/tests/cfi-compare
shift
[[ $# -gt 0 ]] || set -- "/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" /usr/bin
ninja -C "${compare%/tests/cfi-compare}" tests/cfi-compare >&2
"$compare" --full "$@" | grep -v ': left to libdw$'
