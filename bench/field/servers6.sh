#!/bin/bash
# bench/field/servers6.sh BUILD [OUT] — round 6's long-running programs, as root and as nobody:
# a static Go program (CGO_ENABLED=0: no dynamic loader, so `osprey attach`), attached for 3 s
# by its own user and its output compared with a plain run's; PostgreSQL 15 (run as nobody: it
# refuses root) under `pgbench`, one backend attached for 3 s by root, by nobody, and by nobody
# with perf events refused (the ptrace sampler), the
# server then started under `osprey postgres --profile --duration 8` as nobody with `pgbench`
# running 4 s of it, and a last `pgbench -t 20` after the report (the server ran on). Needs
# root, Go, and Debian's postgresql-15 (initdb, pg_ctl, pgbench). Outputs under OUT.
set -u
build=$(cd "$1" && pwd)
out=${2:-/tmp/osprey-field6}
here=$(cd "$(dirname "$0")" && pwd)
osprey=$build/tools/osprey
nb=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$out/pg")
mkdir -p "$out/bin" "$out/root" "$out/nobody" "$out/pg"
chmod 777 "$out" "$out/nobody" "$out/pg"
chmod 755 "$out/bin"
[ -x "$out/bin/gospin" ] || (cd "$here/progs" && GO111MODULE=off CGO_ENABLED=0 go build -o "$out/bin/gospin" spin.go)

echo "== Go, static, attached"
for who in root nobody; do
  run=()
  [ $who = nobody ] && run=("${nb[@]}")
  "${run[@]}" "$out/bin/gospin" 300 >"$out/$who/gospin.out" &
  pid=$!
  sleep 0.5
  NO_COLOR=1 "${run[@]}" "$osprey" attach "$pid" --duration 3 -o "$out/$who/gospin-attach" \
    >/dev/null 2>"$out/$who/gospin-attach.err"
  echo "$who: attach exit $?"
  wait "$pid"
  echo "$who: program exit $?"
  "$out/bin/gospin" 300 | cmp -s - "$out/$who/gospin.out" && echo "$who: output same as plain"
  bash "$here/check.sh" "$build" "$out/$who/gospin-attach"
done

echo "== postgres + pgbench"
pg=/usr/lib/postgresql/15/bin
db=$out/pg/data
if [ ! -d "$db" ]; then
  "${nb[@]}" "$pg/initdb" -D "$db" -A trust -U nobody >"$out/pg/initdb.log" 2>&1
fi
server=(-D "$db" -k "$out/pg" -p 5499 -c listen_addresses=)
bench() { "${nb[@]}" pgbench -h "$out/pg" -p 5499 "$@" postgres 2>&1 | grep -E 'tps|failed|error'; }
"${nb[@]}" "$pg/postgres" "${server[@]}" >"$out/pg/server.log" 2>&1 &
sleep 3
"${nb[@]}" pgbench -i -s 3 -h "$out/pg" -p 5499 postgres >"$out/pg/init.log" 2>&1
for who in root nobody ptrace; do
  bench -c 2 -j 1 -T 6 >"$out/pg/bench-$who.log" &
  b=$!
  sleep 1.5
  backend=$(pgrep -u nobody -f "postgres: nobody postgres" | head -1)
  # ptrace: nobody again, perf_event_open refused (tests/refuse): the ptrace sampler.
  run=()
  [ $who = nobody ] && run=("${nb[@]}")
  [ $who = ptrace ] && run=("${nb[@]}" "$build/tests/refuse" perf_event_open)
  stem=$out/nobody/pg-$who
  [ $who = root ] && stem=$out/root/pg-attach
  [ $who = nobody ] && stem=$out/nobody/pg-attach
  (cd "$out/nobody" && NO_COLOR=1 "${run[@]}" "$osprey" attach "$backend" --duration 3 \
    -o "$stem" >/dev/null 2>"$stem.err")
  echo "$who: attach to backend $backend exit $?"
  wait "$b"
  sed "s/^/$who: pgbench /" "$out/pg/bench-$who.log"
  grep -A1 '^sampling\|^warning' "$stem.err"
  grep -A3 'SELF%' "$stem.err"
  bash "$here/check.sh" "$build" "$stem"
done
"${nb[@]}" "$pg/pg_ctl" -D "$db" stop -m fast >/dev/null
(NO_COLOR=1 "${nb[@]}" "$osprey" "$pg/postgres" --profile --duration 8 -o "$out/nobody/pg" -- \
  "${server[@]}" >/dev/null 2>"$out/nobody/pg.err"
echo "nobody: osprey postgres --profile --duration 8 exit $?") &
sleep 2.5
bench -c 2 -j 1 -T 4 | sed 's/^/nobody: pgbench under the profile /'
# The report comes at 8 s; osprey stays the server's parent until the server ends.
while ! grep -q '^written:' "$out/nobody/pg.err" 2>/dev/null; do sleep 0.5; done
bench -c 1 -t 20 | sed 's/^/nobody: pgbench after the profile /'
"${nb[@]}" "$pg/pg_ctl" -D "$db" stop -m fast >/dev/null
wait
for f in "$out/nobody"/pg.raw*.json; do
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("  pid %d: %s, %d samples over %.2f s" % (r["pid"], r["exit"]["status"], len(r["samples"]), (r["end_unix_ns"] - r["start_unix_ns"]) / 1e9))' "$f"
done
bash "$here/check.sh" "$build" "$out/nobody/pg"
