#!/bin/bash
# bench/field/kernel-share.sh BUILD [BEFORE] — the report's `kernel:` line beside perf's share
# of samples in the kernel, on lighttpd under `ab` (8 s, 8 connections, a 20 kB page on
# loopback). Two runs: lighttpd alone under `perf record -e cpu-clock` (the program's own
# share), then under `osprey lighttpd --profile --duration 14` with perf recording that run too
# (the shim's wrapper around each call it wraps is user time there); the second run's raw file
# is reported again by BEFORE's osprey when given (a build of another tree). Root only (perf's
# kernel samples; lighttpd drops to nobody). KEEP=1 keeps the files (the raw profile, perf's data).
set -u
build=$1
before=${2:-}
for tool in lighttpd ab perf; do
  command -v "$tool" >/dev/null || { echo "needs lighttpd, ab (apache2-utils) and perf"; exit 1; }
done
dir=$(mktemp -d /tmp/osprey-kernel-share.XXXXXX)
chmod 755 "$dir"
mkdir "$dir/www"
head -c 20000 /usr/share/common-licenses/GPL-3 >"$dir/www/index.html"
chmod -R a+rX "$dir/www"
printf 'server.document-root = "%s/www"\nserver.port = 8794\nserver.bind = "127.0.0.1"\nserver.username = "nobody"\nserver.groupname = "nogroup"\nserver.pid-file = "%s/lighttpd.pid"\nindex-file.names = ("index.html")\n' \
  "$dir" "$dir" >"$dir/lighttpd.conf"

kernel_share() { # PERF.DATA -> lighttpd's share of samples in [kernel.kallsyms]
  perf report -i "$1" --sort comm,dso --stdio 2>/dev/null | grep -v '^#' |
    awk '$2 == "lighttpd" { all += $1; if ($3 == "[kernel.kallsyms]") k = $1 }
         $2 == "lighttpd" && $3 == "libospreyprof.so" { shim = $1 }
         END { printf "kernel %.1f%% of lighttpd'"'"'s samples (libospreyprof.so %.1f%%)\n", 100 * k / all, 100 * shim / all }'
}

load() { # STEM: wait for the server, load it, stop it
  for _ in $(seq 60); do grep -q "server started" "$1.err" 2>/dev/null && break; sleep 0.25; done
  sleep 0.5
  ab -q -t 8 -n 1000000 -c 8 http://127.0.0.1:8794/index.html 2>&1 | grep "Requests per second"
}

perf record -q -e cpu-clock -o "$dir/plain.data" -- lighttpd -D -f "$dir/lighttpd.conf" \
  >"$dir/plain.out" 2>"$dir/plain.err" &
run=$!
load "$dir/plain"
kill -TERM "$(cat "$dir/lighttpd.pid")"
wait "$run"
echo "plain, perf: $(kernel_share "$dir/plain.data")"

NO_COLOR=1 perf record -q -e cpu-clock -o "$dir/osprey.data" -- "$build/tools/osprey" lighttpd \
  --profile --duration 14 -o "$dir/osprey" -- lighttpd -D -f "$dir/lighttpd.conf" \
  >"$dir/osprey.out" 2>"$dir/osprey.err" &
run=$!
load "$dir/osprey"
for _ in $(seq 240); do grep -q '^written:' "$dir/osprey.err" && break; sleep 0.5; done
kill -TERM "$(cat "$dir/lighttpd.pid")"
wait "$run"
echo "profiled, perf: $(kernel_share "$dir/osprey.data")"
grep -E '^(osprey:|sampling:|kernel:)' "$dir/osprey.err" | sed 's/^/profiled, osprey: /'
if [ -n "$before" ]; then
  "$before/tools/osprey" report "$dir/osprey.raw.json" --format folded -o "$dir/before" 2>&1 |
    grep '^kernel:' | sed 's/^/profiled, before: /'
fi
if [ "${KEEP:-0}" = 1 ]; then echo "kept: $dir"; else rm -rf "$dir"; fi
