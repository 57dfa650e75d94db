#!/bin/bash
# bench/seccomp/run.sh BUILD [ROUNDS] [BEFORE_BUILD] — what the shim's check for a seccomp filter
# costs at boot (shim/README.md, "A filter at boot"): osp__seccomp_check alone, without a filter
# (one read of /proc/self/status) and under one that kills a call nobody here makes (every call
# of the shim's tried in a child), linked with BUILD's archive (check.c); then a preloaded
# program's time from exec to main, each shim (BEFORE_BUILD's too, when given) with and without
# that filter, interleaved (boot.c). Medians and quartiles in microseconds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
rounds=${2:-30}
before=${3:-}
out=$(mktemp -d /tmp/osprey-bench-seccomp.XXXXXX)
trap 'rm -rf "$out"' EXIT
gcc -O2 -o "$out/check" "$here/check.c" "$build/shim/libospreyprof.a" -lpthread -ldl
gcc -O2 -o "$out/boot" "$here/boot.c"
"$out/check" "$((rounds * 5))"
shims=$build/shim/libospreyprof.so
[ -n "$before" ] && shims="$(cd "$before" && pwd)/shim/libospreyprof.so,$shims"
"$out/boot" "$rounds" "$shims" "$build/daemon/ospreyd" "$out"
