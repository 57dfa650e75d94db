#!/usr/bin/env bash
# End-to-end: a program is all of its processes. A real run of several processes (a shell that
# runs a program twice, and a program that forks and execs itself, both descendants profiled
# as exec'd with the profiler's environment) gives one report naming every process with its
# CPU, and every output holds every process: speedscope, pprof (go tool pprof reads its pid
# and comm labels), the trace (a track per thread under its real pid), folded, profile.json.
# Usage: e2e-processes.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-processes.sh path/to/osprey}")
scratch_dir processes
cd "$work" || exit 1

# parent_spin in the program, child_spin in the copy it forks and execs (--child).
cat >spawn.c <<'EOF2'
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile uint64_t sink;
static __attribute__((noinline)) void parent_spin(void)
{
    for (uint64_t i = 0; i < 150000000; i++)
        sink += i;
}
static __attribute__((noinline)) void child_spin(void)
{
    for (uint64_t i = 0; i < 300000000; i++)
        sink += i * 3;
}
int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0) {
        child_spin();
        return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        char *again[] = {argv[0], "--child", NULL};
        execv("/proc/self/exe", again);
        _exit(127);
    }
    parent_spin();
    int status = 0;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
EOF2
clang -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer spawn.c -o spawn ||
  fail "cannot build spawn.c"

# --- a program that forks and execs itself -----------------------------------------------------
# Forked children are profiled too (tests/e2e-forks.sh); here the fork only execs, and the
# few hundred microseconds before its exec would now and then take a sample of their own, a
# third process: OSPREY_PROFILE_FORKS=0 keeps this run to the two images it is about.
OSPREY_PROFILE_FORKS=0 "$osprey" ./spawn --profile -o run/spawn >out 2>report
expect_status 0 $? "spawn"
grep -q "^osprey: 2 processes, " report || fail "spawn: the header does not count 2 processes: $(cat report)"
[ "$(grep -c '^  process [0-9]* (spawn) .* CPU' report)" = 2 ] ||
  fail "spawn: not one line per process with its CPU: $(cat report)"
grep -q "PROCESS" report || fail "spawn: no PROCESS column: $(cat report)"
grep -qE "^.* [0-9]+ spawn +child_spin " report || fail "spawn: child_spin not in the table: $(cat report)"
grep -qE "^.* [0-9]+ spawn +parent_spin " report || fail "spawn: parent_spin not in the table: $(cat report)"
grep -q "^  1 more raw file: run/spawn.raw.<pid>….json$" report ||
  fail "spawn: the written list does not name the other raw file: $(cat report)"
! grep -q "wrote its own profile" report || fail "spawn: a line per descendant: $(cat report)"
root_pid=$(sed -n 's/^  process \([0-9]*\) (spawn).*/\1/p' report | head -n 1)
child_pid=$(sed -n 's/^  process \([0-9]*\) (spawn).*/\1/p' report | sed -n 2p)
if [ -z "$root_pid" ] || [ -z "$child_pid" ] || [ "$root_pid" = "$child_pid" ]; then
  fail "spawn: two pids expected in the process lines: $(cat report)"
fi
[ -e "run/spawn.raw.$child_pid.json" ] || fail "spawn: no run/spawn.raw.$child_pid.json ($(ls run))"

# osprey report of the root's raw file: the same run, both processes, nothing rewritten
"$osprey" report run/spawn.raw.json >again 2>err
expect_status 0 $? "report of the run"
grep -q "^osprey: 2 processes, " again || fail "report: not both processes: $(cat again)"
# --pid: one process, as a profile of one process looks
"$osprey" report run/spawn.raw.json --pid "$child_pid" >one 2>err
expect_status 0 $? "report --pid"
! grep -q "PROCESS\|processes," one || fail "--pid: still several processes: $(cat one)"
grep -q "child_spin" one || fail "--pid: child_spin missing: $(cat one)"
! grep -q "parent_spin" one || fail "--pid: parent_spin of the other process: $(cat one)"
grep -q "written: nothing (a view of the profile)" one || fail "--pid: not a view: $(cat one)"
"$osprey" report run/spawn.raw.json --pid 1 >none 2>err
expect_status 1 $? "report --pid 1"
expect_one_line err ": --pid 1: no such process \(the profile has: $root_pid \(spawn\), $child_pid \(spawn\)\)" "--pid 1"
"$osprey" report run/spawn.raw.json --per-process >sections 2>err
expect_status 0 $? "report --per-process"
grep -q "^process $child_pid (spawn): " sections || fail "--per-process: no section: $(cat sections)"
# a malformed sibling: one warning line, left out; named, the error
printf '{"version":1,\n "pid": }\n' >run/spawn.raw.999999.json
"$osprey" report run/spawn.raw.json >again 2>err
expect_status 0 $? "report with a malformed sibling"
expect_one_line err "^osprey: warning: run/spawn.raw.999999.json:2:[0-9]+: .*; left out" "malformed sibling"
"$osprey" report run/spawn.raw.999999.json >again 2>err
expect_status 1 $? "report of a malformed file"
expect_one_line err "^run/spawn.raw.999999.json:2:[0-9]+: " "malformed file named"
rm -f run/spawn.raw.999999.json
# diff: each side is a whole run
"$osprey" diff run/spawn.raw.json run/spawn.raw.json -o run/same >diff.out 2>err
expect_status 0 $? "diff of a run of two processes"

# every output holds both processes
# (each thread's root named as perf names it: the main thread's is spawn-<its pid>)
grep -q "^spawn-$root_pid;spawn-$root_pid;.*parent_spin" run/spawn.folded ||
  fail "folded: no spawn-$root_pid line with parent_spin: $(head -n 3 run/spawn.folded)"
grep -q "^spawn-$child_pid;spawn-$child_pid;.*child_spin" run/spawn.folded ||
  fail "folded: no spawn-$child_pid line with child_spin"
python3 - "$root_pid" "$child_pid" <<'EOF2' || fail "speedscope, trace or profile.json lacks a process"
import json, sys
root, child = int(sys.argv[1]), int(sys.argv[2])
speedscope = json.load(open("run/spawn.speedscope.json"))
names = [p["name"] for p in speedscope["profiles"]]
for pid in (root, child):
    assert "spawn-%d: spawn-%d (main)" % (pid, pid) in names, names
trace = json.load(open("run/spawn.trace.json"))
events = trace["traceEvents"]
named = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
assert set(named) == {root, child}, named
for e in events:  # what Perfetto's JSON importer needs of pids and tids
    assert 0 < e["pid"] < 2**32 and 0 <= e["tid"] < 2**32, e
    assert e["ph"] == "M" or isinstance(e.get("ts"), int), e
threads = {(e["pid"], e["tid"]) for e in events if e.get("name") == "thread_name"}
assert {p for p, _ in threads} == {root, child}, threads
profiled = {e["pid"] for e in events if e.get("name") == "Profile"}
assert profiled == {root, child}, profiled
summary = json.load(open("run/spawn.profile.json"))
assert {p["pid"] for p in summary["processes"]} == {root, child}, summary["processes"]
names = {f["name"] for f in summary["functions"]}
assert {"parent_spin", "child_spin"} <= names, names
EOF2
# pprof: go tool pprof reads the labels; each process's CPU under its pid
if command -v go >/dev/null 2>&1; then
  go tool pprof -tags run/spawn.pb.gz >tags 2>err || fail "go tool pprof -tags failed: $(cat err)"
  if ! grep -q "pid" tags || ! grep -q "$root_pid" tags || ! grep -q "$child_pid" tags; then
    fail "go tool pprof -tags: no pid label with both pids: $(cat tags)"
  fi
  if ! grep -q "comm" tags || ! grep -q "spawn" tags; then
    fail "go tool pprof -tags: no comm label: $(cat tags)"
  fi
  go tool pprof -top -tagfocus "pid=$child_pid" run/spawn.pb.gz >top 2>err ||
    fail "go tool pprof -tagfocus failed: $(cat err)"
  if ! grep -q "child_spin" top || grep -q "parent_spin" top; then
    fail "go tool pprof -tagfocus pid=$child_pid: $(cat top)"
  fi
else
  skip_part "go tool pprof -tags/-tagfocus" "go is not installed"
fi

# --- a shell that runs the program twice -----------------------------------------------------
"$osprey" /bin/sh --profile -o run/sh -- -c './spawn --child; ./spawn --child' >out 2>report
expect_status 0 $? "sh -c"
grep -q "^osprey: 3 processes, " report || fail "sh -c: not 3 processes: $(cat report)"
[ "$(grep -c '^  process [0-9]* (spawn) .* CPU' report)" = 2 ] ||
  fail "sh -c: not both runs of the program: $(cat report)"
grep -q "^  2 more raw files: run/sh.raw.<pid>….json$" report || fail "sh -c: written list: $(cat report)"

# --merge-processes: the two runs of the program are one command, one row per function
"$osprey" report run/sh.raw.json --merge-processes -o run/merged >merged 2>err
expect_status 0 $? "report --merge-processes"
grep -q "^osprey: 3 processes of 2 commands, " merged ||
  fail "--merge-processes: header: $(cat merged)"
grep -q "^  spawn (2 processes) .* CPU" merged || fail "--merge-processes: no spawn line: $(cat merged)"
[ "$(sed -n '/SELF% TOTAL%/,/^$/p' merged | grep -c ' spawn  *child_spin ')" = 1 ] ||
  fail "--merge-processes: child_spin is not one row: $(cat merged)"
grep -q "^spawn;.*child_spin [0-9]*$" run/merged.folded ||
  fail "--merge-processes: folded: $(head -n 3 run/merged.folded)"
grep -q "^spawn-[0-9]" run/merged.folded && fail "--merge-processes: a pid in the folded roots"
# and of a profiled run
"$osprey" /bin/sh --profile --merge-processes -o run/sh2 -- -c './spawn --child; ./spawn --child' \
  >out 2>report
expect_status 0 $? "sh -c --merge-processes"
grep -q "^osprey: 3 processes of 2 commands, " report ||
  fail "sh -c --merge-processes: header: $(cat report)"
[ "$(sed -n '/SELF% TOTAL%/,/^$/p' report | grep -c ' spawn  *child_spin ')" = 1 ] ||
  fail "sh -c --merge-processes: child_spin is not one row: $(cat report)"

finish "all multi-process checks passed"
