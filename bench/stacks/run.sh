#!/usr/bin/env bash
# Stacks that are not the thread's own (shim/README.md): the handler's cost per sample on a
# coroutine's stack, in place and from a copy (stacks.c); what a declared switch costs the
# program (switch.c); then one run each of Osprey and
# perf --call-graph dwarf on examples/coroutines.c (frameless, with and without the fiber API)
# and tests/stacks/goprog (cgo), the shares of whole stacks and the splits (shares.py).
# Usage: bash bench/stacks/run.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/../lib.sh"
bench_dirs "${1:-}"
seconds=${2:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-stacks.XXXXXX")
trap 'rm -rf "$work"' EXIT
cpu=$(uname -m)
gcc -O2 -g -fno-omit-frame-pointer -D_GNU_SOURCE -I"$root/shim" -I"$root/shim/arch/$cpu" \
  -I"$root/proto" "$here/stacks.c" "$build/shim/libospreyprof-lower.a" -lpthread -lrt \
  -o "$work/stacks"
"$work/stacks" 30 50000
"$work/stacks" 30 50000 1024 # 30+ KiB: past the first copy
gcc -O2 -I"$root/shim" "$here/switch.c" -o "$work/switch"
"$build/tools/osprey" "$work/switch" --profile -o "$work/switch" -- 2>/dev/null | grep "a switch"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
gcc -O2 -g -fomit-frame-pointer -I"$root/shim" "$root/examples/coroutines.c" -o "$work/coroutines"
cp -r "$root/tests/stacks/goprog" "$work/goprog"
(cd "$work/goprog" && CGO_ENABLED=1 GOFLAGS='' GOPROXY=off GOCACHE="$work/gocache" \
  go build -o "$work/goprog.bin" .)
osprey() { "$build/tools/osprey" "$1" --profile -o "$work/o" -- "${@:2}" >/dev/null 2>&1; }
perf_dwarf() { perf record -q -F 997 --call-graph dwarf -o "$work/p.data" -- "$@" >/dev/null 2>&1; }
for args in "--no-api" ""; do
  # shellcheck disable=SC2086
  osprey "$work/coroutines" "$seconds" $args
  echo "coroutines ${args:-(with the API)}, Osprey: $(python3 "$here/shares.py" coro "$work/o.folded")"
  # shellcheck disable=SC2086
  perf_dwarf "$work/coroutines" "$seconds" $args
  echo "coroutines ${args:-(with the API)}, perf dwarf: $(python3 "$here/shares.py" coro "$work/p.data")"
done
osprey "$work/goprog.bin" "$seconds"
echo "goprog, Osprey: $(python3 "$here/shares.py" go "$work/o.folded")"
perf_dwarf "$work/goprog.bin" "$seconds"
echo "goprog, perf dwarf: $(python3 "$here/shares.py" go "$work/p.data")"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
