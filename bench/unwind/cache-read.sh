#!/usr/bin/env bash
# bench/unwind/cache-read.sh [BUILD_DIR] [OBJECT...] — the cost of reading an object's unwind
# rows back from the cache (cache-read.c, linked against BUILD_DIR's libospd and
# libospcommon; default build/), into a scratch cache. Objects by default: the C library and
# GCC's cc1 (33 MB, the largest on Debian's build machines).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-build}
[[ $build = /* ]] || build=$root/$build
shift || true
objects=("$@")
if [[ ${#objects[@]} -eq 0 ]]; then
    objects=("$(ldd /bin/true | awk '$1 ~ /^libc\.so/ { print $3 }')")
    cc1=$(gcc -print-prog-name=cc1)
    [[ -f $cc1 ]] && objects+=("$cc1")
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/osprey-cache-read.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cc -O2 -D_GNU_SOURCE -I "$root/daemon" -I "$root/proto" -I "$root/common" \
    "$here/cache-read.c" "$build/daemon/libospd.a" "$build/common/libospcommon.a" \
    -ldw -lelf -luv -lpthread -o "$scratch/cache-read"
"$scratch/cache-read" "$scratch/cache" "${objects[@]}"
