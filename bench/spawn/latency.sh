#!/usr/bin/env bash
# A spawned image's wall time as its parent sees it (latency.c: 200 posix_spawns of /bin/true,
# each timed to its reaping; percentiles in ms), plain, under this build's shim, under
# BEFORE_DIR's, and with OSPREYD_FOLLOW=0 (this build's ospreyd starting a collector process
# per image, as before daemon/follow.c), alternating, REPS rounds, one line a run.
# Usage: bash bench/spawn/latency.sh BUILD_DIR BEFORE_DIR [REPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
before=$(cd "$2" && pwd)
reps=${3:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-latency.XXXXXX")
trap 'rm -rf "$work"' EXIT
gcc -O2 "$here/latency.c" -o "$work/latency"
for _ in $(seq "$reps"); do
  for tool in plain osprey process-each before; do
    b=$build follow=1
    [ "$tool" = before ] && b=$before
    [ "$tool" = process-each ] && follow=0
    rm -rf "$work/out" && mkdir "$work/out" && : >"$work/out/.osprey-run.lock"
    if [ "$tool" = plain ]; then
      echo "$tool $("$work/latency" 200)"
      continue
    fi
    echo "$tool $(OSPREYD_FOLLOW=$follow OSPREY_DAEMON="$b/daemon/ospreyd" \
      OSPREY_PROFILE="$work/out/p.raw.json" LD_PRELOAD="$b/shim/libospreyprof.so" \
      "$work/latency" 200 2>/dev/null)"
    flock -w 60 "$work/out/.osprey-run.lock" true
  done
done
