#!/usr/bin/env bash
# End-to-end tests of frames no object file names (daemon/jit-map.c, proto/raw-format.md's
# "jit"):
# - a JIT in miniature (tests/jit/jitlike.c) copies a function into an anonymous executable
#   mapping, runs it hot and writes /tmp/perf-PID.map: the report names it "jit_spin_hot
#   [jit]" in every output; the raw file keeps only the symbol sampled (not the one never run,
#   not the line that does not parse); with the map rewritten, then deleted, the report of the
#   raw file names the same frame; a raw file without "jit" reads as before (the address);
# - a map that is a symbolic link, or (root) belongs to another user, is not read, and the
#   report says so in one line;
# - the page of an executable that holds a function mapped a second time elsewhere, the
#   function run there: named through the file (as V8 maps node's builtins again);
# - node (skipped without it): a script with known hot functions, without a map (V8's
#   builtins named: Builtins_ArrayTimSort; under 40% unnamed, where 60-90% was) and with --perf-basic-prof (the JS functions
#   named "JS:*... [jit]", under 10% of the CPU time unnamed) and with --perf-prof (a jitdump).
# Usage: e2e-jit.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-jit.sh path/to/osprey}")
here=$(dirname "$(realpath "$0")")
maps=()
cleanup() { for m in "${maps[@]}"; do rm -f "$m" "$m.real"; done; }
scratch_dir jit cleanup
chmod 755 "$work"
cd "$work" || exit 1
cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer "$here/jit/jitlike.c" \
  -o jitlike || { fail "cannot build jitlike.c"; finish ""; }

# unnamed FOLDED: the percentage of samples whose leaf no symbol names.
unnamed() { python3 "$here/../bench/jit/unnamed.py" folded "$1"; }

# run NAME MODE [SECONDS]: jitlike profiled; its pid in $pid, its report in NAME.out.
run() {
  "$osprey" ./jitlike --profile -o "$work/$1" -- "${3:-1.0}" "$2" >"$1.out" 2>&1
  expect_status 0 $? "jitlike $2"
  pid=$(head -n 1 "$1.out" | cut -d' ' -f1)
  maps+=("/tmp/perf-$pid.map")
}

# --- the map named, kept in the raw file ---------------------------------------------------
run plain plain
if ! grep -Eq '^.{8} +(9[0-9]|100)\.[0-9]% .*jit_spin_hot \[jit\] +\[jit\]' plain.out; then
  fail "the report does not name the JIT's code (90% or more):"
  sed -n '/SELF%/,/^$/p' plain.out >&2
fi
python3 - "plain.raw.json" "$pid" <<'EOF' || fail "the raw file's jit"
import json, sys
raw = json.load(open(sys.argv[1]))
jit = raw.get("jit")
assert jit is not None, "no jit in the raw file"
assert jit["maps"] == ["/tmp/perf-%s.map" % sys.argv[2]], jit["maps"]
names = [s["name"] for s in jit["symbols"]]
assert names == ["jit_spin_hot"], names  # only what a sample hit
assert all(s["size"] > 0 and s["start"] > 0 for s in jit["symbols"])
EOF
grep -q 'jit_spin_hot \[jit\]' plain.folded || fail "folded: no jit_spin_hot [jit]"
grep -q '"jit_spin_hot \[jit\]"' plain.speedscope.json || fail "speedscope: no jit_spin_hot [jit]"
grep -q '"jit_spin_hot \[jit\]"' plain.cpuprofile || fail "cpuprofile: no jit_spin_hot [jit]"
gzip -dc plain.pb.gz | grep -aq 'jit_spin_hot \[jit\]' || fail "pprof: no jit_spin_hot [jit]"

# Rewritten (another program's code at that address now), then deleted: the raw file's names.
map="/tmp/perf-$pid.map"
address=$(python3 -c "import json; print('%x' % json.load(open('plain.raw.json'))['jit']['symbols'][0]['start'])")
printf '%s 1000 rewritten_since\n' "$address" >"$map"
"$osprey" report plain.raw.json -o "$work/rewritten" >rewritten.out 2>&1
expect_status 0 $? "report after the map was rewritten"
grep -q 'jit_spin_hot \[jit\]' rewritten.out || fail "rewritten map: the report lost the name"
grep -q 'rewritten_since' rewritten.out rewritten.folded && fail "rewritten map: read again"
rm -f "$map"
"$osprey" report plain.raw.json -o "$work/deleted" >deleted.out 2>&1
expect_status 0 $? "report after the map was deleted"
grep -q 'jit_spin_hot \[jit\]' deleted.out || fail "deleted map: the report lost the name"

# A raw file written before "jit": its address, as before.
python3 -c "
import json; raw = json.load(open('plain.raw.json')); del raw['jit']
json.dump(raw, open('old.raw.json', 'w'))"
"$osprey" report old.raw.json -o "$work/old" >old.out 2>&1
expect_status 0 $? "report of a raw file without jit"
grep -q '\[jit\]' old.out && fail "a raw file without jit named a JIT frame"
grep -Eq '^.{8} +[0-9.]+% .* 0x[0-9a-f]+ ' old.out || fail "a raw file without jit: no address"

# --- maps that are not read --------------------------------------------------------------
run link link 0.3
grep -Eq "^jit: /tmp/perf-$pid.map is a symbolic link: not read" link.out ||
  fail "a map that is a link: no line saying so"
grep -q 'jit_spin_hot' link.out && fail "a map that is a link was read"
if [ "$(id -u)" -eq 0 ]; then
  run other other-owner 0.3
  grep -Eq "^jit: /tmp/perf-$pid.map belongs to another user: not read" other.out ||
    fail "another user's map: no line saying so"
  grep -q 'jit_spin_hot' other.out && fail "another user's map was read"
else
  skip_part "another user's map" "only root can give a file to another user"
fi

# --- an object's code mapped a second time ---------------------------------------------------
run remap remap 0.5
if ! grep -Eq '^.{8} +(9[0-9]|100)\.[0-9]% .* spin +jitlike\.c' remap.out; then
  fail "code of the executable mapped again is not named through its file:"
  sed -n '/SELF%/,/^$/p' remap.out >&2
fi

# --- node ----------------------------------------------------------------------------------
if command -v node >/dev/null 2>&1; then
  cp "$here/../bench/jit/hot.js" hot.js
  "$osprey" "$(command -v node)" --profile -o "$work/node" -- hot.js 1500 >node.out 2>&1
  expect_status 0 $? "node"
  grep -q 'Builtins_ArrayTimSort' node.out ||
    fail "node: V8's builtins (mapped again from the node binary) are not named"
  share=$(unnamed node.folded)
  python3 -c "import sys; sys.exit(0 if float('$share') < 40 else 1)" ||
    fail "node: $share% of the CPU time unnamed (expected under 40%: the JIT's code alone)"
  "$osprey" "$(command -v node)" --profile -o "$work/nodemap" -- --perf-basic-prof hot.js 1500 \
    >nodemap.out 2>&1
  expect_status 0 $? "node --perf-basic-prof"
  node_pid=$(python3 -c "import json; print(json.load(open('nodemap.raw.json'))['pid'])")
  maps+=("/tmp/perf-$node_pid.map")
  # mixLoop is 4-6% of the run, about the tenth row: read it among 40 rows, not the run's ten.
  "$osprey" report nodemap.raw.json --top 40 >nodemap.report 2>&1
  grep -Eq 'JS:[*~^]*mixLoop hot.js:[0-9:]* \[jit\] +\[jit\]' nodemap.report ||
    fail "node --perf-basic-prof: mixLoop is not named in the report"
  grep -Eq 'JS:[*~^]*sortArr /.*hot.js:[0-9:]* \[jit\]' nodemap.folded ||
    fail "node --perf-basic-prof: sortArr is not named in the stacks"
  share=$(unnamed nodemap.folded)
  python3 -c "import sys; sys.exit(0 if float('$share') < 10 else 1)" ||
    fail "node --perf-basic-prof: $share% of the CPU time unnamed (expected under 10%)"
  # --perf-prof: a jitdump (jit-PID.dump, here, in the working directory) and no perf map.
  "$osprey" "$(command -v node)" --profile -o "$work/nodedump" -- --perf-prof hot.js 1000 \
    >nodedump.out 2>&1
  expect_status 0 $? "node --perf-prof"
  grep -Eq 'JS:[*~^]*mixLoop /.*hot.js:[0-9:]* \[jit\]' nodedump.folded ||
    fail "node --perf-prof: mixLoop is not named from the jitdump"
  python3 -c "
import json, sys; jit = json.load(open('nodedump.raw.json'))['jit']
sys.exit(0 if len(jit['maps']) == 1 and jit['maps'][0].endswith('.dump') else 1)" ||
    fail "node --perf-prof: the raw file does not name the jitdump it read"
else
  skip_part "node" "node is not installed (scripts/install-deps.sh installs it)"
fi

finish "JIT maps named and kept; refused maps said; remapped code named through its file"
