# shellcheck shell=bash
# lib.sh — what the shell end-to-end tests share; sourced, not run. A test counts its failed
# checks in `failures` and ends with `finish "what passed"`.

# The tests' inline Python imports checks.py (check, the sample weight, whole stacks) from here.
PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ left in the source tree

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# expect_status WANT GOT WHAT
expect_status() {
  if [ "$2" -ne "$1" ]; then fail "$3: exit status $2, expected $1"; fi
}
# expect_one_line FILE PATTERN WHAT: FILE holds exactly one line, matching PATTERN (ERE).
expect_one_line() {
  local lines
  lines=$(wc -l <"$1")
  if [ "$lines" -ne 1 ] || ! grep -Eq "$2" "$1"; then
    fail "$3: expected one line matching '$2', got:"
    cat "$1" >&2
  fi
}
# skip WHY: the test cannot run here: it says why and exits 77 (skipped). Under CI (CI set),
# where scripts/install-deps.sh installs every tool and the run is root, it fails instead.
skip() {
  if [ -n "${CI:-}" ]; then
    echo "FAIL: skipped in CI: $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
# skip_part WHAT WHY [NEVER_IN_CI]: WHAT cannot be checked here; the rest of the test runs, and
# finish ends it skipped (77) naming WHAT, never passed. Under CI that is a failure, unless
# NEVER_IN_CI says why CI can never check WHAT (then it is skipped there too, said).
skipped=()
skipped_in_ci=0
skip_part() {
  echo "SKIP: $1 ($2)${3:+; never in CI: $3}"
  skipped+=("$1 ($2)")
  if [ -z "${3:-}" ]; then skipped_in_ci=$((skipped_in_ci + 1)); fi
}
# require_tmux: the terminal tests need tmux (skipped without it).
require_tmux() {
  command -v tmux >/dev/null 2>&1 ||
    skip "tmux is not installed (apt-get install tmux); the terminal test needs it"
}
# wait_for REGEX SECONDS: until the terminal test's screen (its function `plain`: the pane's
# text) shows REGEX.
wait_for() {
  local deadline=$((SECONDS + $2))
  while [ "$SECONDS" -lt "$deadline" ]; do
    plain | grep -Eq "$1" && return 0
    sleep 0.2
  done
  return 1
}
# build_forks SOURCE_DIR WORK: tests/forks/forks.c built as WORK/forks, its functions kept
# apart (no sibling calls, no identical-code folding) so each is found in the stacks.
build_forks() {
  gcc -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-ipa-icf "$1/forks.c" \
    -o "$2/forks" 2>"$2/build" || fail "build failed: $(cat "$2/build")"
}
# settle_collectors DIR: forked children's collectors write when their processes end, which
# may be after the program's end: wait (bounded, 20 s) until no collector writing into DIR/
# is left.
settle_collectors() {
  for _ in $(seq 200); do
    pgrep -f "ospreyd .*$1/" >/dev/null || return 0
    sleep 0.1
  done
  fail "$1: collectors still running after 20 s"
}
# finish WHAT: exit 1 when any check failed, else say WHAT passed.
# finish WHAT: exit 1 when any check failed; else, when a part was skipped, exit 77 naming it
# (skip); else say WHAT passed.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
  fi
  if [ "${#skipped[@]}" -ne 0 ]; then
    local parts
    parts=$(printf '%s; ' "${skipped[@]}")
    if [ "$skipped_in_ci" -ne 0 ]; then skip "$1, but not: ${parts%; }"; fi
    echo "SKIP: $1, but not: ${parts%; }"
    exit 77
  fi
  echo "$1"
}
# snapshot PID FILE (the attach tests): what of a process a profiler could leave behind, its
# threads, mappings, descriptors and signal masks.
snapshot() {
  {
    ls "/proc/$1/task"
    cat "/proc/$1/maps"
    for fd in /proc/"$1"/fd/*; do echo "$fd $(readlink "$fd")"; done
    grep -E '^Sig(Blk|Ign|Cgt)' "/proc/$1/status"
  } >"$2"
}

# unchanged_since PID BEFORE (the attach tests): the process's snapshot now is the one in the
# file BEFORE, or the test fails showing the difference.
# shellcheck disable=SC2154 # $work is the sourcing test's
unchanged_since() {
  snapshot "$1" "$work/after"
  if ! diff "$2" "$work/after" >"$work/diff"; then
    fail "the process is not as it was before the attach:"
    cat "$work/diff" >&2
  fi
}

# outlived_attach STATUS LOG PID WANT (the attach tests): an attach to PID, which exits
# mid-profile, ended with STATUS 0, said so in one line of LOG and wrote $work/gone.raw.json;
# PID's own exit status stays WANT.
# shellcheck disable=SC2154 # $work is the sourcing test's
outlived_attach() {
  expect_status 0 "$1" "attach to a process that exits mid-profile"
  [ "$(grep -c "ended .* into the profile" "$2")" -eq 1 ] ||
    { fail "a process that exits mid-profile: no one line saying so"; cat "$2" >&2; }
  [ -s "$work/gone.raw.json" ] || fail "a process that exits mid-profile: no raw profile"
  wait "$3"
  expect_status "$4" $? "the exiting program's exit status"
}

# scratch_dir NAME [CLEANUP]: a fresh directory for the test's files, $work (osprey-NAME.XXXXXX
# under $TMPDIR or /tmp). When the test ends, each process whose id the test added to `pids` is
# killed, CLEANUP runs (the test's function stopping, closing or removing what else it must),
# and $work is removed.
pids=()
scratch_dir() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/osprey-$1.XXXXXX")
  scratch_cleanup=${2:-}
  trap scratch_end EXIT
}
scratch_end() {
  if [ "${#pids[@]}" -ne 0 ]; then kill "${pids[@]}" 2>/dev/null; fi
  if [ -n "$scratch_cleanup" ]; then "$scratch_cleanup"; fi
  rm -rf "$work"
}

# The samples taken once ospreyd had published the rows of every object mapped at start
# (collector.unwind.ready_ns): before that, stacks follow frame pointers only and end in libc,
# for a window that a loaded machine stretches (10.8% of throw's samples once). Uses the test's
# $osprey and $work.
# shellcheck disable=SC2154 # $osprey and $work are the sourcing test's
after_ready() { # after_ready NAME: NAME.raw.json's samples from ready_ns on -> NAME-ready.folded
  python3 - "$work/$1.raw.json" "$work/$1-ready.raw.json" <<'PY' || fail "$1: no raw file of the samples after ready_ns"
import json, sys
from checks import load_raw
raw = load_raw(sys.argv[1])
ready = raw.get("collector", {}).get("unwind", {}).get("ready_ns", 0)
if not ready:
    sys.exit("no collector.unwind.ready_ns: the unwind rows were never all published")
raw["samples"] = [s for s in raw["samples"] if s[0] >= ready]
with open(sys.argv[2], "w") as f:
    json.dump(raw, f)
PY
  "$osprey" report "$work/$1-ready.raw.json" -o "$work/$1-ready" --format folded >/dev/null \
    2>"$work/$1-ready.err" || fail "$1: osprey report exited $? ($(tail -n 3 "$work/$1-ready.err"))"
}
# ospreyd_under PID: the pid of the ospreyd under PID (every thread's children: an orphan goes
# to whichever thread of a subreaper), waited for up to 2 s; nothing when none came.
ospreyd_under() {
  local k
  for _ in $(seq 100); do
    for k in $(descendants_of "$1"); do
      [ "$(cat "/proc/$k/comm" 2>/dev/null)" = ospreyd ] && echo "$k" && return 0
    done
    sleep 0.02
  done
}
descendants_of() { # descendants_of PID: every process under PID
  local k kids
  kids=$(cat /proc/"$1"/task/*/children 2>/dev/null)
  for k in $kids; do
    echo "$k"
    descendants_of "$k"
  done
}
# wakeups PID: its main thread's voluntary context switches so far.
wakeups() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$1/status" 2>/dev/null; }
# wakes_per_second PID: its wake-ups a second over the next 2 s, or nothing when it ended.
wakes_per_second() {
  local first last
  first=$(wakeups "$1")
  sleep 2
  last=$(wakeups "$1")
  [ -n "$first" ] && [ -n "$last" ] && echo $(((last - first) / 2))
}
# raw_dropped RAW: the raw file's `dropped`, or nothing.
raw_dropped() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("dropped", 0))' "$1" \
    2>/dev/null
}
