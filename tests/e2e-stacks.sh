#!/usr/bin/env bash
# End-to-end: stacks that are not the thread's own (shim/README.md, "Stacks that are not the
# thread's own"). Programs from tests/stacks/ and examples/, through the preload shim:
#   coroutines  examples/coroutines.c (two makecontext coroutines on 256 KiB heap stacks, work
#               3:1), with and without frame pointers, with osp_prof_fiber_switch and without
#               (--no-api: the stack copied): >= 95% of burn's samples once the rows were
#               published reach their coroutine's entry, coro_heavy's share of them 0.65-0.85;
#               with the API each coroutine is a fiber of its own (fiber 1 "heavy", fiber 2
#               "light", on the main thread) in the raw file and every output, 0.65-0.85 heavy;
#   sigalt      a handler on a sigaltstack doing three units of work for each of main's: >= 90%
#               of handler_work's samples are walked through the signal frame to main; and
#               with the loop on a coroutine's stack nothing declares (copied at the signal
#               frame), >= 90% of burn's samples reach the coroutine's entry;
#   corrupt     hostile frame chains on the thread's stack, on a copied coroutine stack and
#               into a page another thread maps and unmaps: output and status unchanged;
#   go          tests/stacks/goprog (cgo, two goroutines, main.run -> hotA/hotB/hotC 5:3:2):
#               >= 95% of on-CPU samples reach runtime.goexit, runtime.main or runtime.mstart,
#               main.run holds >= 98% of main.spin's samples, the split within 3 points; no
#               "stacks:" line (skipped without go, never in CI: install-deps installs it);
#               the same attached (osprey attach): the same shares of roots and of main.run.
# Usage: e2e-stacks.sh OSPREY SOURCE_ROOT
set -uo pipefail

osprey=${1:?usage: e2e-stacks.sh OSPREY SOURCE_ROOT}
root=${2:?}
src=$root/tests/stacks
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$here/lib.sh"
scratch_dir stacks

build() { # build OUT FLAGS... SOURCES...
  local out=$1
  shift
  gcc "$@" -o "$work/$out" 2>"$work/$out.build" || fail "$out: build failed: $(cat "$work/$out.build")"
}
build coro-fp -O2 -g -fno-omit-frame-pointer -I"$root/shim" "$root/examples/coroutines.c"
build coro-nofp -O2 -g -fomit-frame-pointer -I"$root/shim" "$root/examples/coroutines.c"
build sigalt -O2 -g "$src/sigalt.c"
[ "$(uname -m)" = x86_64 ] && build corrupt -O2 -g "$src/corrupt.c" -lpthread

profile() { # profile NAME PROGRAM ARGS...
  local name=$1 program=$2
  shift 2
  "$osprey" "$program" --profile -o "$work/$name" -- "$@" >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: osprey exited $? ($(tail -n 3 "$work/$name.err"))"
}

# share FOLDED LEAF_RE WITH_RE: of the samples whose leaf matches LEAF_RE, the share whose
# stack has a frame matching WITH_RE.
share() {
  python3 - "$@" <<'PY'
import re, sys
folded, leaf, with_ = sys.argv[1], re.compile(sys.argv[2]), re.compile(sys.argv[3])
n = k = 0
for line in open(folded):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")[1:]
    if not frames or not leaf.fullmatch(frames[-1]):
        continue
    n += int(count)
    if any(with_.fullmatch(f) for f in frames):
        k += int(count)
print(f"{k / n:.3f} {n}" if n else "0 0")
PY
}
at_least() { # at_least WHAT GOT MIN
  python3 -c "import sys; sys.exit(0 if float('$2') >= float('$3') else 1)" ||
    fail "$1: $2 (want >= $3)"
}
between() { # between WHAT GOT LO HI
  python3 -c "import sys; sys.exit(0 if float('$3') <= float('$2') <= float('$4') else 1)" ||
    fail "$1: $2 (want $3-$4)"
}

# fibers NAME api|no-api: with the API, each coroutine a fiber of its own under the label the
# program gave (raw threads, folded roots, speedscope profiles, trace tracks, the report), on
# the main thread, holding its coroutine's samples, 3:1; without it, the thread's alone.
fibers() {
  python3 - "$work/$1" "$2" <<'PY' || fail "$1: the coroutines are not their fibers"
import json, sys
from collections import Counter
stem, api = sys.argv[1], sys.argv[2] == "api"
raw = json.load(open(stem + ".raw.json"))
threads = raw["threads"]
main = [t for t in threads if t["fiber"] == 0][0]
declared = {(t["fiber"], t["label"]): t["tid"] for t in threads if t["fiber"] != 0}
if not api:
    sys.exit(f"fibers without the API: {declared}" if declared else 0)
want = {(1, "heavy"), (2, "light")}
if set(declared) != want or set(declared.values()) != {main["tid"]}:
    sys.exit(f"raw threads {threads}: want fibers 1 heavy and 2 light on tid {main['tid']}")
roots, under = Counter(), Counter()
for line in open(stem + ".folded"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    roots[frames[0]] += int(count)
    for coro in ("coro_heavy", "coro_light"):
        if coro in frames:
            under[coro, frames[0]] += int(count)
heavy, light = roots["heavy-1"], roots["light-2"]
share = heavy / max(heavy + light, 1)
print(f"fibers: heavy-1 {heavy}, light-2 {light} ({share:.3f} heavy); roots {dict(roots)}")
if not 0.65 <= share <= 0.85:
    sys.exit(f"heavy-1's share of the two fibers' samples {share:.3f} (want 0.65-0.85)")
for coro, root in (("coro_heavy", "heavy-1"), ("coro_light", "light-2")):
    n = sum(v for (c, _), v in under.items() if c == coro)
    if under[coro, root] < 0.98 * n:
        sys.exit(f"{coro}: {under[coro, root]} of {n} samples under {root}")
names = {p["name"] for p in json.load(open(stem + ".speedscope.json"))["profiles"]}
if not {"heavy-1", "light-2"} <= names:
    sys.exit(f"speedscope profiles {names}")
trace = json.load(open(stem + ".trace.json"))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
tracks = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
if not {"fiber 1 (heavy)", "fiber 2 (light)"} <= tracks:
    sys.exit(f"trace tracks {tracks}")
report = open(stem + ".out").read() + open(stem + ".err").read()
if "fiber 1 (heavy)" not in report or "fiber 2 (light)" not in report:
    sys.exit("the report has no line for fiber 1 (heavy) and fiber 2 (light)")
PY
}

for variant in fp nofp; do
  for api in api no-api; do
    name=coro-$variant-$api
    args=(1.5)
    [ $api = no-api ] && args+=(--no-api)
    profile "$name" "$work/coro-$variant" "${args[@]}"
    grep -q "^rounds" "$work/$name.out" || fail "$name: the program's output is missing"
    # Checked once the rows were published (lib.sh, after_ready); the whole run's beside.
    read -r all n_all < <(share "$work/$name.folded" burn 'coro_(heavy|light)')
    after_ready "$name"
    read -r whole n < <(share "$work/$name-ready.folded" burn 'coro_(heavy|light)')
    echo "$name: $whole of $n burn samples reach their coroutine ($all of $n_all in the whole run)"
    at_least "$name: burn samples reaching coro_heavy or coro_light" "$whole" 0.95
    read -r heavy _ < <(share "$work/$name-ready.folded" burn 'coro_heavy')
    between "$name: coro_heavy's share of burn" "$(python3 -c "print(round($heavy / max($whole, 1e-9), 3))")" 0.65 0.85
    fibers "$name" "$api"
  done
done

profile sigalt "$work/sigalt" 1.5
grep -q "^done" "$work/sigalt.out" || fail "sigalt: the program's output is missing"
read -r whole n < <(share "$work/sigalt.folded" burn 'handler_work')
read -r main_only _ < <(share "$work/sigalt.folded" burn 'main_work')
echo "sigalt: handler_work $whole of $n burn samples, main_work $main_only"
between "sigalt: handler_work's share of burn" "$whole" 0.6 0.85
after_ready sigalt
python3 - "$work/sigalt-ready.folded" <<'PY' || fail "sigalt: handler_work's stacks do not reach main"
import sys
n = k = 0
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")[1:]
    if "handler_work" in frames:
        n += int(count)
        k += int(count) * ("main" in frames and frames.index("main") < frames.index("handler_work"))
print(f"sigalt: {k} of {n} handler_work samples reach main through the signal frame")
sys.exit(0 if n and k >= 0.9 * n else 1)
PY
# The same on a coroutine's stack nothing declares: copied at the signal frame.
profile sigalt-coroutine "$work/sigalt" 1.5 coroutine
after_ready sigalt-coroutine
read -r whole n < <(share "$work/sigalt-coroutine-ready.folded" burn 'handler_work')
read -r entry _ < <(share "$work/sigalt-coroutine-ready.folded" burn 'coro_entry')
echo "sigalt-coroutine: handler_work $whole of $n burn samples; $entry of them reach coro_entry"
at_least "sigalt-coroutine: burn samples reaching coro_entry" "$entry" 0.90

if [ "$(uname -m)" = x86_64 ]; then
  OSPREY_PROFILE_HZ=10000 profile corrupt "$work/corrupt" 1.5
  grep -qx "done 1" "$work/corrupt.out" || fail "corrupt: output changed: $(head -c 200 "$work/corrupt.out")"
  [ -s "$work/corrupt.raw.json" ] || fail "corrupt: no profile"
else
  skip_part corrupt "its hostile frames are set by x86_64 assembly"
fi

if ! command -v go >/dev/null 2>&1; then
  skip_part go "go is not installed (apt-get install golang-go)"
else
  cp -r "$src/goprog" "$work/goprog"
  (cd "$work/goprog" && CGO_ENABLED=1 GOFLAGS='' GOPROXY=off GOCACHE="$work/gocache" \
    GOPATH="$work/gopath" go build -o "$work/goprog.bin" .) >"$work/go.build" 2>&1 ||
    fail "go: build failed: $(tail -n 5 "$work/go.build")"
  OSPREY_PROFILE_HZ=4000 profile go "$work/goprog.bin" 2 # 4 kHz: the split within 3 points is 3 standard errors
  grep -q "^done" "$work/go.out" || fail "go: the program's output is missing"
  read -r rooted n < <(share "$work/go.folded" '.*' 'runtime\.(goexit|main|mstart)(\.abi0)?')
  read -r run _ < <(share "$work/go.folded" 'main\.spin' 'main\.run')
  echo "go: $rooted of $n on-CPU samples reach a Go root; main.run holds $run of main.spin's"
  at_least "go: samples reaching runtime.goexit/main/mstart" "$rooted" 0.95
  at_least "go: main.run's share of main.spin's samples" "$run" 0.98
  for f in hotA:0.5 hotB:0.3 hotC:0.2; do
    read -r got _ < <(share "$work/go.folded" 'main\.spin' "main\\.${f%:*}")
    between "go: main.${f%:*}'s share of main.spin" "$got" "$(python3 -c "print(${f#*:} - 0.03)")" \
      "$(python3 -c "print(${f#*:} + 0.03)")"
  done
  ! grep -q "^stacks:" "$work/go.out" "$work/go.err" ||
    fail "go: the report says stacks were cut: $(grep -h '^stacks:' "$work/go.out" "$work/go.err")"

  # The same program attached (the kernel's copy of each stack, daemon/stack-walk.c).
  paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
  if [ "$paranoid" -gt 2 ] && [ "$(id -u)" -ne 0 ]; then
    skip_part "go attached" "perf events are not allowed here (perf_event_paranoid $paranoid)"
  else
    "$work/goprog.bin" 6 >"$work/go-attach.prog" 2>&1 &
    pid=$!
    sleep 0.5
    "$osprey" attach "$pid" --duration 2 -o "$work/go-attach" >"$work/go-attach.out" 2>&1 ||
      fail "go attached: osprey attach exited $? ($(tail -n 3 "$work/go-attach.out"))"
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    read -r rooted n < <(share "$work/go-attach.folded" '.*' 'runtime\.(goexit|main|mstart)(\.abi0)?')
    read -r run _ < <(share "$work/go-attach.folded" 'main\.spin' 'main\.run')
    echo "go attached: $rooted of $n on-CPU samples reach a Go root; main.run holds $run of main.spin's"
    at_least "go attached: samples reaching runtime.goexit/main/mstart" "$rooted" 0.95
    at_least "go attached: main.run's share of main.spin's samples" "$run" 0.98
  fi
fi

finish "stacks: coroutines (with and without frame pointers and the API), a sigaltstack handler, hostile chains, Go"
