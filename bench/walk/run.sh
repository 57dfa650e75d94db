#!/usr/bin/env bash
# The handler's walk timed alone (walk.c): by unwind rows through frameless code, and by the
# frame-pointer walk; and what a stack copy costs by size (copy.c). Usage: bash bench/walk/run.sh
# [BUILD_DIR] [DEPTH] [WALKS]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
depth=${2:-30}
walks=${3:-200000}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-walk.XXXXXX")
trap 'rm -rf "$work"' EXIT
cpu=$(uname -m)
# The frameless build (gcc -O2 omits frame pointers) and, for the frame-pointer walk's own
# best case, the same with frame pointers.
for variant in frameless fp; do
  flags=()
  [ "$variant" = fp ] && flags=(-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer)
  gcc -O2 -g "${flags[@]}" -D_GNU_SOURCE -I"$root/shim" -I"$root/shim/arch/$cpu" -I"$root/proto" \
    -I"$root/daemon" -I"$root/common" -I"$build/common" "$here/walk.c" "$build/shim/libospreyprof-lower.a" \
    "$build/daemon/libospd.a" "$build/common/libospcommon.a" \
    -ldw -lelf -lpthread -lrt -o "$work/walk-$variant"
  echo "== $variant (gcc -O2 ${flags[*]}), $depth frames deep"
  "$work/walk-$variant" "$depth" "$walks"
done
# What a stack copy's read costs the handler, by size (copy.c).
gcc -O2 -g -D_GNU_SOURCE -I"$root/shim" -I"$root/shim/arch/$cpu" -I"$root/proto" "$here/copy.c" \
  "$build/shim/libospreyprof-lower.a" -lpthread -lrt -o "$work/copy"
echo "== stack copies (osp__stack_copy_read)"
"$work/copy"
