#!/usr/bin/env bash
# End-to-end tests of the `osprey` command: usage and errors, building a C file, the
# program's stdin/stdout/stderr/exit code passing through with and without --profile, a
# program killed by a signal, `osprey report` on a bad raw file, Ctrl-C forwarding, and a
# leaf function's caller staying on the sampled stacks.
# Usage: e2e-cli.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-cli.sh path/to/osprey}")
scratch_dir cli-test
cd "$work" || exit 1


# --- usage, version, errors --------------------------------------------------------------
"$osprey" --help >out 2>err
expect_status 0 $? "--help"
grep -q "^usage: osprey FILE" out || fail "--help does not print the usage"
grep -q "osprey report RAW" out || fail "--help does not mention 'osprey report'"

"$osprey" --version >out 2>err
expect_status 0 $? "--version"
grep -Eq "^osprey [0-9]+\.[0-9]+\.[0-9]+(-[0-9]+-g[0-9a-f]+)?(-dirty)?$" out || fail "--version prints '$(cat out)'"

"$osprey" --no-such-flag prog.c >out 2>err
expect_status 2 $? "unknown flag"
expect_one_line err "^osprey: unknown option '--no-such-flag'" "unknown flag"

"$osprey" >out 2>err
expect_status 2 $? "no FILE"
expect_one_line err "^osprey: missing FILE" "no FILE"

"$osprey" missing.c --run >out 2>err
expect_status 2 $? "missing file"
expect_one_line err "^osprey: missing.c: No such file or directory$" "missing file"

echo "just text" >notes.txt
"$osprey" notes.txt --run >out 2>err
expect_status 2 $? "non-executable file"
expect_one_line err "^osprey: notes.txt: not a C source" "non-executable file"

mkdir adir
"$osprey" adir --profile >out 2>err
expect_status 2 $? "directory"
expect_one_line err "^osprey: adir: is a directory" "directory"

# --- a C file that does not compile --------------------------------------------------------
cat >broken.c <<'EOF'
int main(void)
{
    return undeclared_variable;
}
EOF
"$osprey" broken.c --profile >out 2>err
status=$?
[ "$status" -ne 0 ] || fail "compile error: exit status 0"
grep -q "broken.c:3:12: error: use of undeclared identifier 'undeclared_variable'" err ||
  fail "compile error: clang's diagnostic is not shown"
if [ "$(grep -c '^osprey: ' err)" -ne 1 ] || ! grep -q "^osprey: broken.c: build failed" err; then
  fail "compile error: no one-line summary"
fi
ls ./broken* >listing
[ "$(wc -l <listing)" -eq 1 ] || fail "compile error: files were left behind: $(cat listing)"

# --- output and exit code pass through ----------------------------------------------------
cat >echo3.c <<'EOF'
#include <stdio.h>
int main(int argc, char **argv)
{
    char line[256];
    if (fgets(line, sizeof line, stdin) != NULL)
        printf("stdin: %s", line);
    for (int i = 1; i < argc; i++)
        printf("arg %d: [%s]\n", i, argv[i]);
    fprintf(stderr, "to stderr\n");
    return 3;
}
EOF
printf 'stdin: hello there\narg 1: [a b]\narg 2: [--help]\n' >expected-out
for mode in --run --profile; do
  echo "hello there" | "$osprey" echo3.c "$mode" -o "echo3$mode" -- "a b" --help >out 2>err
  expect_status 3 $? "exit code under $mode"
  if [ "$mode" = --run ]; then
    cmp -s out expected-out || fail "stdout under --run differs: $(cat out)"
    [ "$(cat err)" = "to stderr" ] || fail "stderr under --run differs: $(cat err)"
  else
    # Not a terminal: stdout is the program's alone, the report goes to stderr.
    cmp -s out expected-out || fail "stdout under --profile differs: $(cat out)"
    [ "$(head -n 1 err)" = "to stderr" ] || fail "stderr under --profile differs: $(cat err)"
    for ext in raw.json speedscope.json cpuprofile profile.json; do
      [ -s "echo3--profile.$ext" ] || fail "--profile did not write echo3--profile.$ext"
    done
    # One line per distinct stack: empty when the program ended before the first tick.
    [ -e "echo3--profile.folded" ] || fail "--profile did not write echo3--profile.folded"
  fi
done

# --- the program's environment: untouched by --run; --profile adds the profiler's -------------
# shellcheck disable=SC2016 # the $ expand in the script, not here
printf '#!/bin/sh\necho "profile=${OSPREY_PROFILE:-unset}"\necho "preload=${LD_PRELOAD:-unset}"\n' \
  >show-env
chmod +x show-env
env -u OSPREY_PROFILE LD_PRELOAD=libm.so.6 "$osprey" ./show-env --run >out 2>err
expect_status 0 $? "environment under --run"
printf 'profile=unset\npreload=libm.so.6\n' | cmp -s - out ||
  fail "--run changed the program's environment: $(cat out)"
env -u OSPREY_PROFILE LD_PRELOAD=libm.so.6 "$osprey" ./show-env --profile -o show-env >out 2>err
expect_status 0 $? "environment under --profile"
grep -Eq "^profile=/.+\.json$" out || fail "--profile: no OSPREY_PROFILE for the program: $(cat out)"
grep -Eq "^preload=/.*/libospreyprof\.so:libm\.so\.6$" out ||
  fail "--profile: the preload shim is not ahead of the program's LD_PRELOAD: $(cat out)"

# --- a program killed by a signal -----------------------------------------------------------
cat >suicide.c <<'EOF'
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    volatile unsigned long spin = 0;
    for (unsigned long i = 0; i < 50000000UL; i++)
        spin += i;
    printf("about to die\n");
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return 0;
}
EOF
for mode in --run --profile; do
  "$osprey" suicide.c "$mode" -o "suicide$mode" >out 2>err
  expect_status 137 $? "killed program under $mode"
  [ "$(head -n 1 out)" = "about to die" ] || fail "killed program under $mode: stdout $(cat out)"
  grep -q "^osprey: suicide.c was killed by signal 9" err ||
    fail "killed program under $mode: no message on stderr: $(cat err)"
done
# The daemon outlives the program and writes what it had.
[ -s "suicide--profile.raw.json" ] || fail "killed program: no raw profile kept"

# --- osprey report on a bad raw file -----------------------------------------------------------
printf '{"version": 1,\n "pid": 12,\n "exe": [oops\n' >bad.raw.json
"$osprey" report bad.raw.json >out 2>err
status=$?
[ "$status" -ne 0 ] || fail "report on a bad raw file: exit status 0"
expect_one_line err "^bad\.raw\.json:[0-9]+:[0-9]+: " "report on a bad raw file"
[ ! -e bad.speedscope.json ] || fail "report on a bad raw file wrote outputs"

"$osprey" report nothing-here.raw.json >out 2>err
expect_status 2 $? "report on a missing file"
expect_one_line err "^osprey: nothing-here.raw.json: No such file or directory$" \
  "report on a missing file"

# --- the caller of a leaf function is on the stacks ---------------------------------------------
cat >leaf.c <<'EOF'
#include <stdint.h>
#include <stdio.h>
static volatile uint64_t seed = 88172645463325252ULL;
/* A leaf: calls nothing, so only a frame pointer in it keeps its caller on the stack.
 * xorshift, which no compiler folds into a closed form. */
__attribute__((noinline)) static uint64_t leaf_spin(uint64_t n)
{
    uint64_t x = seed;
    for (uint64_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}
__attribute__((noinline)) static uint64_t named_caller(uint64_t n)
{
    uint64_t total = leaf_spin(n);
    return total ^ (total >> 7);
}
int main(void)
{
    uint64_t sum = 0;
    for (int i = 0; i < 40; i++)
        sum += named_caller(10000000);
    printf("%llu\n", (unsigned long long)(sum & 1));
    return 0;
}
EOF
"$osprey" leaf.c --profile -o leaf >out 2>err
expect_status 0 $? "leaf program"
if ! grep -q "named_caller;leaf_spin " leaf.folded; then
  fail "leaf program: no 'named_caller;leaf_spin' stack in leaf.folded"
  head -n 5 leaf.folded >&2
fi
if grep -Eq "(^|;)main;leaf_spin " leaf.folded; then
  fail "leaf program: stacks skip named_caller (main;leaf_spin)"
fi

# --- Ctrl-C: the program stops, the profile up to that point is kept -------------------------
cat >forever.c <<'EOF'
#include <stdio.h>
__attribute__((noinline)) static unsigned long forever_work(void)
{
    volatile unsigned long x = 0;
    for (;;)
        x++;
    return x;
}
int main(void)
{
    printf("started\n");
    fflush(stdout);
    return (int)forever_work();
}
EOF
# Job control on: a background job of a script would otherwise start with SIGINT ignored,
# and a program started with SIGINT ignored rightly keeps ignoring it.
set -m
"$osprey" forever.c --profile -o forever >out 2>err &
osprey_pid=$!
set +m
for _ in $(seq 1 200); do
  grep -q started out 2>/dev/null && break
  sleep 0.05
done
sleep 1
kill -INT "$osprey_pid"
for _ in $(seq 1 600); do
  kill -0 "$osprey_pid" 2>/dev/null || break
  sleep 0.05
done
if kill -0 "$osprey_pid" 2>/dev/null; then
  fail "interrupted program: osprey still running 30 s after SIGINT"
  kill -KILL -- "-$osprey_pid" # its own process group: osprey and the program
fi
wait "$osprey_pid"
expect_status 130 $? "interrupted program"
grep -q "^osprey: forever.c was killed by signal 2" err || fail "interrupted: $(cat err)"
grep -q "forever_work" forever.folded 2>/dev/null ||
  fail "interrupted program: no forever_work in forever.folded"

# A program that forks and execs itself: the exec'd descendant writes its own profile, which
# is kept beside the program's as <stem>.raw.<pid>.json (not lost with the scratch directory)
# and read with it: one report of both processes.
cat >spawner.c <<'EOF'
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    char *again[] = {argv[0], "--descendant", NULL};
    if (argc > 1)
        return puts(argv[1]) < 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(execv("/proc/self/exe", again) == 0 ? 0 : 127);
    int status = 0;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
EOF
# The fork only execs; the microseconds before its exec would now and then take a sample of
# their own (a third raw file; forked children are tests/e2e-forks.sh's): not profiled here.
OSPREY_PROFILE_FORKS=0 "$osprey" spawner.c --profile -o spawner >out 2>err
expect_status 0 $? "forking program"
kept=$(compgen -G 'spawner.raw.*.json' | head -n 1)
[ -n "$kept" ] || fail "forking program: no descendant profile kept ($(ls spawner.*))"
grep -q "^  1 more raw file: spawner.raw.<pid>….json$" err ||
  fail "forking program: the written list does not name the descendant's raw file: $(cat err)"
! grep -q "descendant process wrote its own profile" err ||
  fail "forking program: a line still sends the user to the descendant's profile: $(cat err)"
if [ -n "$kept" ]; then
  "$osprey" report "$kept" -o descendant >/dev/null 2>err ||
    fail "forking program: osprey report of the descendant's profile failed: $(cat err)"
fi

# --- a wrapper that execs the program (a launcher script, env, pyenv's shims) -----------------
clang -O2 -g -fno-omit-frame-pointer leaf.c -o leafbin || fail "wrapper: cannot build leafbin"
printf '#!/bin/sh\nexec ./leafbin "$@"\n' >wrapper.sh
chmod +x wrapper.sh
"$osprey" ./wrapper.sh --profile -o wrapped >out 2>err
expect_status 0 $? "wrapper that execs"
ls wrapped.raw.[0-9]*-[0-9a-f]*.json >/dev/null 2>&1 ||
  fail "wrapper: the exec'd image's raw file is not kept ($(ls wrapped.*))"
# Both images are one run's processes; the last one (the program meant) comes first.
first_process=$(grep -m 1 "^  process [0-9]* (" err)
case "$first_process" in
  *"(leafbin)"* | "") ;;
  *) fail "wrapper: the report's first process is not the exec'd program: $first_process" ;;
esac
grep -q "named_caller;leaf_spin " wrapped.folded 2>/dev/null ||
  fail "wrapper: the outputs are not of the exec'd program ($(head -n 3 wrapped.folded 2>&1))"

# --- the rate on the command line: -F N / --frequency N ---------------------------------------
# shellcheck disable=SC2016 # the $ expand in the script, not here
printf '#!/bin/sh\necho "ran hz=${OSPREY_PROFILE_HZ:-unset}"\n' >show-hz
chmod +x show-hz
OSPREY_PROFILE_HZ=50 "$osprey" -F 4999 ./show-hz --profile -o rate -- -F 7 >out 2>err
expect_status 0 $? "-F 4999"
grep -qx "ran hz=4999" out || fail "-F 4999: the program saw $(cat out)"
grep -q '"rate_hz":4999' rate.raw.json || fail "-F 4999: the raw profile's rate is not 4999"
"$osprey" ./show-hz --profile --frequency=10 -o rate10 >out 2>err
grep -qx "ran hz=10" out || fail "--frequency=10: the program saw $(cat out)"
for bad in 9 10001 50000 abc 99x; do
  "$osprey" ./show-hz --profile -F "$bad" -o never >out 2>err
  expect_status 2 $? "-F $bad"
  expect_one_line err "^osprey: option '-F' needs a rate from 10 to 10000 samples per second \(got '$bad'\)$" "-F $bad"
  [ ! -s out ] || fail "-F $bad: the program ran: $(cat out)"
done
[ ! -e never.raw.json ] || fail "a refused -F left a raw file"
# OSPREY_PROFILE_HZ set by hand is clamped, and the run says so in one line, not one per
# process (the script's /bin/true images read the same variable).
printf '#!/bin/sh\n/bin/true\n/bin/true\necho family ran\n' >hz-family
chmod +x hz-family
for hz in 50000 fast; do
  OSPREY_PROFILE_HZ=$hz "$osprey" ./hz-family --profile -o family >out 2>err
  expect_status 0 $? "OSPREY_PROFILE_HZ=$hz"
  grep -qx "family ran" out || fail "OSPREY_PROFILE_HZ=$hz: the program saw $(cat out)"
  [ "$(grep -c "OSPREY_PROFILE_HZ=$hz" err)" -eq 1 ] ||
    fail "OSPREY_PROFILE_HZ=$hz: not one line: $(grep OSPREY_PROFILE_HZ err)"
done
grep -qx "osprey: OSPREY_PROFILE_HZ=fast is not a number; sampling at 997 Hz" err ||
  fail "OSPREY_PROFILE_HZ=fast: $(cat err)"
OSPREY_PROFILE_HZ=50000 "$osprey" ./hz-family --profile -o family >out 2>err
grep -qx "osprey: OSPREY_PROFILE_HZ=50000 is outside 10..10000; sampling at 10000 Hz" err ||
  fail "OSPREY_PROFILE_HZ=50000: no clamp line: $(cat err)"
grep -q '"rate_hz":10000' family.raw.json || fail "OSPREY_PROFILE_HZ=50000: rate not 10000"

# A static executable runs unprofiled (nothing preloads into it): the way forward is attach.
printf 'int main(void) { return 4; }\n' >static.c
if cc -static -o static-prog static.c 2>/dev/null; then
  "$osprey" ./static-prog --profile -o static >out 2>err
  expect_status 4 $? "a static executable"
  grep -q "statically linked.*'osprey attach PID'" err || fail "static: no way forward: $(cat err)"
else
  skip_part "a static executable" "no static C library (libc6-dev has it)"
fi

# Other tools' habits: perf's and py-spy's -p PID, perf's record.
"$osprey" -p 1234 >out 2>err
expect_status 2 $? "-p 1234"
expect_one_line err "^osprey: unknown option '-p': to profile the running process 1234, 'osprey attach 1234'" "-p 1234"
"$osprey" record ./show-hz >out 2>err
expect_status 2 $? "record ./show-hz"
expect_one_line err "^osprey: unknown command 'record': to run and profile a program, 'osprey ./show-hz --profile'$" "record"

# --- --duration: the profile ends, the report is printed, the program runs on ----------------
cat >long.c <<'EOF2'
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static volatile double sink;
int main(void) { double end = now() + 2.5; while (now() < end) sink += 1; puts("long done"); return 3; }
EOF2
"$osprey" long.c --profile --duration 0.8 -o dur >out 2>err
expect_status 3 $? "--duration 0.8"
grep -qx "long done" out || fail "--duration: the program did not run to its end ($(cat out))"
python3 - dur.raw.json <<'EOF2' || fail "--duration: the profile is not of the first 0.8 s"
import sys
from checks import load_raw, on_cpu_seconds
raw = load_raw(sys.argv[1])
span = (raw["end_unix_ns"] - raw["start_unix_ns"]) / 1e9
on_cpu = on_cpu_seconds(raw)
# The program spins on the wall clock: on a loaded machine it gets less than a CPU, so its
# on-CPU samples are held to the CPU time it had by the stop (read then), not to 0.8 s.
cpu = raw["process_cpu_ns"] / 1e9
ok = (raw["exit"]["status"] == "stopped" and 0.7 <= span <= 1.3 and cpu <= 1.1 * span and
      0.05 <= on_cpu and abs(on_cpu - cpu) <= 0.1 * cpu + 0.02)
print("duration: exit %s, %.2f s profiled, %.2f s on-CPU of %.2f s used" %
      (raw["exit"]["status"], span, on_cpu, cpu))
sys.exit(0 if ok else 1)
EOF2
grep -q "^sampling: achieved" err || fail "--duration: no sampling line in the report ($(cat err))"
for bad in 0 -1 abc; do
  "$osprey" long.c --profile --duration "$bad" -o never >out 2>err
  expect_status 2 $? "--duration $bad"
  grep -q "option '--duration' needs a number of seconds" err || fail "--duration $bad: $(cat err)"
done
"$osprey" long.c --duration 1 >out 2>err
expect_status 2 $? "--duration without --profile"

# --- each command's own help and mistakes ------------------------------------------------------
for command in report diff cache; do
  "$osprey" "$command" --help >out 2>err
  expect_status 0 $? "osprey $command --help"
  head -n 1 out | grep -q "^usage: osprey $command" ||
    fail "osprey $command --help: $(head -n 1 out)"
  grep -q "^usage: osprey FILE\|^ *osprey $([ "$command" = report ] && echo diff || echo report) " out &&
    fail "osprey $command --help prints another command's usage"
done
grep -q -- "--max-size SIZE" out || fail "osprey cache --help does not describe --max-size"
"$osprey" report --help >out
grep -q -- "--inverted" out || fail "osprey report --help does not describe --inverted"
grep -q -- "--frequency" out && fail "osprey report --help describes -F, which it refuses"
"$osprey" --help >out
grep -q -- "-F, --frequency N" out || fail "--help does not describe -F"

"$osprey" reprot rate.raw.json >out 2>err
expect_status 2 $? "a mistyped command"
expect_one_line err "^osprey: unknown command 'reprot': did you mean 'osprey report'\?$" \
  "a mistyped command"
"$osprey" rate.raw.json >out 2>err
expect_status 2 $? "a raw profile as the program"
expect_one_line err "^osprey: rate.raw.json: a raw profile, not a program: did you mean 'osprey report rate.raw.json'\?$" \
  "a raw profile as the program"
"$osprey" report rate.raw.json >out 2>err
expect_status 0 $? "report of the -F run"
for pair in "speedscope.json:a speedscope file; open it in speedscope" \
  "cpuprofile:a Chrome .cpuprofile" "folded:a folded-stacks file" \
  "profile.json:the summary JSON" "pb.gz:a pprof profile" "trace.json:a Chrome trace"; do
  suffix=${pair%%:*}
  "$osprey" report "rate.$suffix" >out 2>err
  expect_status 2 $? "report of rate.$suffix"
  expect_one_line err "^osprey: rate.$suffix: this is ${pair#*:}.*, or give osprey report the raw profile: rate.raw.json$" \
    "report of rate.$suffix"
done

# --- the output place, checked before the program starts ---------------------------------------
mkdir -p stemdir
"$osprey" ./show-hz --profile -o stemdir >out 2>err
expect_status 2 $? "a stem that is a directory"
expect_one_line err "^osprey: stemdir: is a directory; -o takes a stem" "a stem that is a directory"
[ ! -s out ] || fail "a stem that is a directory: the program ran"
"$osprey" ./show-hz --profile -o show-hz/under/stem >out 2>err
expect_status 2 $? "a stem under a file"
expect_one_line err "^osprey: show-hz: not a directory, so the outputs at show-hz/under/stem cannot be written$" \
  "a stem under a file"
[ ! -s out ] || fail "a stem under a file: the program ran"
if [ "$(id -u)" -ne 0 ]; then # root writes into any directory
  mkdir locked && chmod 555 locked
  "$osprey" ./show-hz --profile -o locked/new/stem >out 2>err
  expect_status 2 $? "an unwritable place"
  expect_one_line err "^osprey: locked: cannot " "an unwritable place"
  [ ! -s out ] || fail "an unwritable place: the program ran"
  chmod 755 locked
fi
"$osprey" ./show-hz --profile -o fresh/deeper/stem >out 2>err
expect_status 0 $? "a stem in directories still to be made"
grep -q "^  fresh/deeper/stem.raw.json$" out err || fail "written: does not list the raw file"
grep -q "replaced" out err && fail "a first run says it replaced files"
"$osprey" ./show-hz --profile -o fresh/deeper/stem >out 2>err
grep -q "^replaced 9 files from an earlier run at this stem$" out err ||
  fail "a second run does not say it replaced the first's files: $(cat out err)"

# Outputs that cannot all be written (a file-size limit stands in for a full disk): the report
# is printed all the same, the missing files are named on one line, the others are complete.
(
  trap '' XFSZ
  ulimit -f 16
  exec "$osprey" report rate.raw.json -o limited >out 2>err
)
expect_status 1 $? "report with outputs that cannot be written"
grep -q "^osprey: .* wall, " out || fail "outputs that cannot be written: no report: $(cat out err)"
grep -Eq "^not written: limited\.html; .*File too large" out ||
  fail "outputs that cannot be written: no line naming them: $(cat out)"
[ ! -e limited.html ] || fail "a file that could not be written was left"
ls limited.html.* >/dev/null 2>&1 && fail "a temporary file was left: $(ls limited.html.*)"
grep -q "^  limited.speedscope.json$" out || fail "outputs that cannot be written: written: list"
# The same in a profiled run (a directory where one output goes: the size limit would stop the
# profiler itself): its exit status is the program's, the report says it once.
mkdir limited-run.html
"$osprey" ./show-hz --profile -o limited-run >out 2>err
expect_status 0 $? "a run with outputs that cannot be written"
grep -qx "ran hz=unset" out || fail "a run with outputs that cannot be written: the program's output"
grep -Eq "^not written: limited-run\.html; " err ||
  fail "a run with outputs that cannot be written: no line naming them: $(cat err)"
[ "$(grep -c "limited-run\.html" err)" -eq 1 ] ||
  fail "a run with outputs that cannot be written: said more than once: $(cat err)"
grep -q "^  limited-run.raw.json$" err || fail "a run with outputs that cannot be written: raw file"

finish "all osprey CLI checks passed"
