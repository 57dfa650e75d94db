#!/usr/bin/env bash
# End-to-end: forked children where the machine is shared or the run is unusual, under the
# preload shim and ospreyd (tests/forks/forks.c; daemon/README.md, "Forked children"):
#   flood     as root, `forks burn` (1.5 s of CPU in work_parent) profiled alone and while
#             nobody keeps up to 100 silent connections open to its collector's abstract
#             socket (tests/forks/flood.py finds it in /proc/net/unix, as anyone can): the
#             attacked run's output and status are as plain, its CPU recorded within 10% of
#             what it used, no period lost to full rings, its wall time within twice the
#             run alone's (plus a second: the machine is shared); the attacker did connect.
#   many      `forks many`: 600 children of 3 ms CPU each in work_short, 20 at a time, each
#             ending with exit: output and status as plain, and the children's recorded CPU
#             at least 90% of what the plain run's children used (each one's last period is
#             paid at its exit, as a thread's is when it ends).
# Usage: e2e-forks-hardening.sh OSPREY SHIM_SO OSPREYD SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-forks-hardening.sh OSPREY SHIM_SO OSPREYD SOURCE_DIR}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
shim=${2:?}
daemon=${3:?}
src=${4:?}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$here/lib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-forks-hardening.XXXXXX")
trap 'rm -rf "$work"' EXIT

build_forks "$src" "$work"

now() { date +%s.%N; }
# profiled NAME MODE [ENV...]: run `forks MODE` profiled into $work/NAME/ in the background;
# its pid in $victim.
profiled() {
  local name=$1 mode=$2
  shift 2
  mkdir -p "$work/$name"
  env "$@" OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$work/$name/p.raw.json" LD_PRELOAD="$shim" \
    "$work/forks" "$mode" >"$work/$name.out" 2>"$work/$name.err" &
  victim=$!
}
# finished NAME START: wait for the background run, keep its status and wall time.
finished() {
  wait "$victim"
  echo $? >"$work/$1.status"
  python3 -c "import sys; print('%.3f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$(now)" "$2" >"$work/$1.wall"
}
# on_cpu RAW: seconds on CPU the raw file recorded, and the periods lost in the rings.
on_cpu() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
cpu = sum(r[4] if len(r) > 4 else 1 for r in d["samples"] if r[3] == 0) / d["rate_hz"]
print("%.4f %d" % (cpu, d.get("drops", {}).get("ring_full", 0)))' "$1"
}

# --- flood: another user's silent connections to the fork socket ---------------------------
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: flood: needs root (the attacker runs as nobody)"
else
  "$work/forks" burn >"$work/plain.out" 2>/dev/null
  echo $? >"$work/plain.status"
  start=$(now)
  profiled alone burn
  finished alone "$start"
  chmod 755 "$work"
  # nobody's python: the system's (a python3 of root's PATH may live in root's home)
  system_python=/usr/bin/python3
  [ -x "$system_python" ] || system_python=$(command -v python3)
  cp "$src/flood.py" "$work/flood.py"
  chmod 644 "$work/flood.py"
  start=$(now)
  profiled flood burn
  setpriv --reuid=nobody --regid=nogroup --clear-groups "$system_python" "$work/flood.py" "$victim" 30 \
    >"$work/attacker.out" 2>"$work/attacker.err" &
  attacker=$!
  finished flood "$start"
  kill "$attacker" 2>/dev/null
  wait "$attacker"
  expect_status "$(cat "$work/plain.status")" "$(cat "$work/flood.status")" "flood: the attacked run"
  [ "$(awk '{print $1}' "$work/plain.out")" = "$(awk '{print $1}' "$work/flood.out")" ] ||
    fail "flood: the attacked run's output differs: $(cat "$work/flood.out")"
  read -r opened _ closed < <(awk '{print $2, $3, $4}' "$work/attacker.out")
  echo "attacker: opened ${opened:-?} connections, ${closed:-?} closed by the collector; $(cat "$work/attacker.err")"
  [ "${opened:-0}" -ge 20 ] || fail "flood: the attacker made ${opened:-no} connections"
  for name in alone flood; do
    used=$(awk '{print $3}' "$work/$name.out")
    read -r got lost < <(on_cpu "$work/$name/p.raw.json")
    echo "$name: wall $(cat "$work/$name.wall") s, CPU $used s, recorded $got s, $lost periods lost in full rings"
    python3 -c 'import sys; u, g = map(float, sys.argv[1:]); sys.exit(abs(g - u) > 0.1 * u)' "$used" "$got" ||
      fail "$name: recorded $got s of $used s on CPU"
    [ "$lost" -eq 0 ] || fail "$name: $lost periods lost in full rings"
  done
  python3 -c 'import sys; a, f = map(float, sys.argv[1:]); sys.exit(f > 2 * a + 1)' \
    "$(cat "$work/alone.wall")" "$(cat "$work/flood.wall")" ||
    fail "flood: wall $(cat "$work/flood.wall") s attacked against $(cat "$work/alone.wall") s alone"
  grep -v "^osprey: " "$work/flood.err" | grep -q . && fail "flood: unexpected stderr: $(cat "$work/flood.err")"
fi

# --- many: short forked children, 20 at a time -------------------------------------------
"$work/forks" many >"$work/many-plain.out" 2>/dev/null
echo $? >"$work/many-plain.status"
start=$(now)
profiled many many
finished many "$start"
settle_collectors "$work/many"
expect_status "$(cat "$work/many-plain.status")" "$(cat "$work/many.status")" "many: the profiled run"
grep -v "^osprey: " "$work/many.err" | grep -q . && fail "many: unexpected stderr: $(cat "$work/many.err")"
python3 - "$work/many" "$(awk '{print $3}' "$work/many-plain.out")" <<'PY' || fail "many: children's CPU lost (above)"
import glob, json, sys
files = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/p.raw.*.json")]
forked = [d for d in files if d.get("forked")]
cpu = sum(sum(r[4] if len(r) > 4 else 1 for r in d["samples"] if r[3] == 0) / d["rate_hz"]
          for d in forked)
plain = float(sys.argv[2])
print("many: %d children with a profile of 600, %.3f s recorded of %.3f s their CPU plain (%.1f%%)"
      % (len(forked), cpu, plain, 100 * cpu / plain))
sys.exit(cpu < 0.9 * plain)
PY

finish "forked children: other users, many processes, unusual runs handled"
