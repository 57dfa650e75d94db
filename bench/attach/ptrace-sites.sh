#!/usr/bin/env bash
# bench/attach/ptrace-sites.sh BUILD_DIR [REPS] [OUT]: where the ptrace sampler puts a thread's
# CPU time beside the system calls it waits in, against perf events. Two programs, each attached
# 3 s by the ptrace sampler (perf_event_open refused by tests/refuse) and by perf events (as
# root: kernel frames, and so the kernel's CPU time at each call's site, included):
#   - tests/attach/alternate.c: a thread alternating 5 ms of CPU in alternate_work with a wait
#     of about 5 ms in fdatasync (alternate_sync) or a pipe's read (alternate_pipe), REPS runs;
#   - a PostgreSQL 15 backend under `pgbench -c 2` (the server run as nobody, as
#     bench/field/servers6.sh does; skipped without /usr/lib/postgresql/15), REPS attaches of each.
# Per sampler: the on-CPU samples (of the alternating thread; of the backend) whose stack holds
# each site, as a share of them all, summed over the runs. Needs root.
set -uo pipefail
build=$(cd "${1:?usage: ptrace-sites.sh BUILD_DIR [REPS] [OUT]}" && pwd)
reps=${2:-3}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/osprey-ptrace-sites.XXXXXX")}
src=$(cd "$(dirname "$0")/../.." && pwd)
osprey=$build/tools/osprey
noperf=("$build/tests/refuse" perf_event_open)
mkdir -p "$out/alt" "$out/pg/r"
chmod 777 "$out" "$out/pg" "$out/pg/r"

shares() { # DIR KIND THREAD_PREFIX SITE=FRAME[,FRAME...]...
  python3 - "$@" <<'PY'
import glob, sys
d, kind, prefix, sites = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
total, at = 0, {s.split("=")[0]: 0 for s in sites}
for path in sorted(p for p in glob.glob(f"{d}/{kind}-*.folded") if ".offcpu." not in p):
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        frames, n = stack.split(";"), int(n)
        if not frames[0].startswith(prefix):
            continue
        total += n
        for s in sites:
            name, names = s.split("=")
            at[name] += n if any(f in names.split(",") for f in frames) else 0
print(f"{kind:7s} {total:6d} on-CPU samples: " +
      "  ".join(f"{k} {100 * v / max(total, 1):.1f}%" for k, v in at.items()))
PY
}

echo "== tests/attach/alternate.c, $reps runs of each"
gcc -O2 -g -fomit-frame-pointer "$src/tests/attach/alternate.c" -lpthread -o "$out/alt/alternate" ||
  exit 1
for i in $(seq "$reps"); do
  for kind in ptrace perf; do
    "$out/alt/alternate" 5 "$out/alt/data" >"$out/alt/$kind-$i.out" &
    pid=$!
    sleep 0.5
    run=()
    [ $kind = ptrace ] && run=("${noperf[@]}")
    "${run[@]}" "$osprey" attach "$pid" --duration 3 -o "$out/alt/$kind-$i" >/dev/null \
      2>"$out/alt/$kind-$i.err"
    wait "$pid"
  done
done
for kind in ptrace perf; do
  shares "$out/alt" $kind alternator- work=alternate_work fdatasync=alternate_sync \
    pipe=alternate_pipe
done

pg=/usr/lib/postgresql/15/bin
[ -x "$pg/postgres" ] || { echo "== postgres: skipped (no $pg/postgres)"; exit 0; }
echo "== postgres 15 backend under pgbench -c 2, $reps attaches of each"
nb=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$out/pg")
db=$out/pg/data
[ -d "$db" ] || "${nb[@]}" "$pg/initdb" -D "$db" -A trust -U nobody >"$out/pg/initdb.log" 2>&1
server=(-D "$db" -k "$out/pg" -p 5498 -c listen_addresses=)
"${nb[@]}" "$pg/postgres" "${server[@]}" >"$out/pg/server.log" 2>&1 &
sleep 3
"${nb[@]}" pgbench -i -s 3 -h "$out/pg" -p 5498 postgres >"$out/pg/init.log" 2>&1
"${nb[@]}" pgbench -h "$out/pg" -p 5498 -c 2 -j 1 -T $((reps * 8 + 4)) postgres \
  >"$out/pg/bench.log" 2>&1 &
bench=$!
sleep 1.5
backend=$(pgrep -u nobody -f "postgres: nobody postgres" | head -1)
for i in $(seq "$reps"); do
  "${nb[@]}" "${noperf[@]}" "$osprey" attach "$backend" --duration 3 -o "$out/pg/r/ptrace-$i" \
    >/dev/null 2>"$out/pg/r/ptrace-$i.err"
  "$osprey" attach "$backend" --duration 3 -o "$out/pg/r/perf-$i" >/dev/null \
    2>"$out/pg/r/perf-$i.err"
done
wait "$bench"
"${nb[@]}" "$pg/pg_ctl" -D "$db" stop -m fast >/dev/null
for kind in ptrace perf; do
  shares "$out/pg/r" $kind "" fdatasync=fdatasync send=__libc_send,__send,send \
    epoll_wait=epoll_wait recv=__libc_recv,__recv,recv
done
