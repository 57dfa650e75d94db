#!/usr/bin/env bash
# End-to-end tests of `osprey report`'s views and `osprey diff` on real profiles: --top,
# --fiber, --focus/--ignore, --inverted, --list, --format, their errors, and the diff's table
# and its speedscope/pprof pair. The program is built here (clang, frame pointers, -g) and kept,
# so the reports can symbolize it again.
# Usage: e2e-cli-report.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-cli-report.sh path/to/osprey}")
scratch_dir cli-report
cd "$work" || exit 1

# table_rows FILE: the function names of the report's table, in order.
table_rows() {
  sed -n '/SELF% TOTAL%/,/^$/p' "$1" | grep -E '[0-9.]+%' | grep -v '←' |
    awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+m?s$/ && $(i+1) ~ /^[0-9.]+m?s$/) { print $(i+2); break }}'
}

# main: leaf_hot through outer_a (3 parts) and outer_b (1 part); a worker thread in worker_spin.
cat >shape.c <<'EOF2'
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
static volatile uint64_t sink;
static __attribute__((noinline)) void leaf_hot(int n)
{
    uint64_t x = sink;
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    sink = x;
}
static __attribute__((noinline)) void outer_a(void) { leaf_hot(3000000); }
static __attribute__((noinline)) void outer_b(void) { leaf_hot(1000000); }
static __attribute__((noinline)) void worker_spin(void)
{
    uint64_t x = 1;
    for (long i = 0; i < 150000000L; i++)
        x = x * 2862933555777941757u + 3037000493u;
    sink = x;
}
static void *worker(void *arg) { (void)arg; worker_spin(); return NULL; }
int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 60;
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    for (int r = 0; r < rounds; r++) {
        outer_a();
        outer_b();
    }
    pthread_join(thread, NULL);
    return 0;
}
EOF2
clang -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread -o shape shape.c ||
  { echo "FAIL: cannot build the test program" >&2; exit 1; }
"$osprey" ./shape --profile -o run -- 60 >out 2>err
expect_status 0 $? "profiling the program"
[ -f run.raw.json ] || { echo "FAIL: no raw profile: $(cat err)" >&2; exit 1; }
if grep -q "^not sampled:" err; then fail "a sampled run said not sampled: $(cat err)"; fi

# --top N: N rows.
"$osprey" report run.raw.json -o view --top 2 >out 2>err
expect_status 0 $? "--top 2"
[ "$(table_rows out | wc -l)" -eq 2 ] || fail "--top 2: $(table_rows out | tr '\n' ' ')"
"$osprey" report run.raw.json -o view >out 2>err
[ "$(table_rows out | wc -l)" -ge 3 ] || fail "default table: $(cat out)"

# --fiber 0: the main thread only (no worker_spin); the outputs follow the selection.
"$osprey" report run.raw.json -o view --fiber 0 >out 2>err
expect_status 0 $? "--fiber 0"
table_rows out | grep -qx leaf_hot || fail "--fiber 0: no leaf_hot: $(cat out)"
table_rows out | grep -qx worker_spin && fail "--fiber 0: worker_spin shown: $(cat out)"
grep -q worker_spin view.folded && fail "--fiber 0: worker_spin in the folded output"
"$osprey" report run.raw.json -o view --fiber no-such-fiber >out 2>err
expect_status 1 $? "--fiber unknown"
grep -q "no such fiber (the profile has: 0 (main)" err || fail "--fiber unknown: $(cat err)"

# --focus / --ignore
"$osprey" report run.raw.json -o view --focus '^outer_a$' >out 2>err
expect_status 0 $? "--focus"
table_rows out | grep -qx leaf_hot || fail "--focus outer_a: no leaf_hot: $(cat out)"
table_rows out | grep -qx worker_spin && fail "--focus outer_a: worker_spin shown"
grep -q outer_b view.folded && fail "--focus outer_a: outer_b in the folded output"
# The sampling line is the whole run's in a view: a view's share of the samples is no shortfall.
for view in "--focus ^outer_b$" "--ignore ^leaf_hot$" "--fiber 0"; do
  # shellcheck disable=SC2086
  "$osprey" report run.raw.json $view >out 2>err
  grep -q "achieved.*(the whole run)" out || fail "$view: no whole-run sampling line: $(cat out)"
  grep "achieved" out | grep -qv "(the whole run)" && fail "$view: the view's own rate: $(cat out)"
done
"$osprey" report run.raw.json -o view --ignore 'leaf_hot' >out 2>err
expect_status 0 $? "--ignore"
table_rows out | grep -qx leaf_hot && fail "--ignore leaf_hot: leaf_hot shown"
table_rows out | grep -qx worker_spin || fail "--ignore leaf_hot: no worker_spin: $(cat out)"
"$osprey" report run.raw.json -o view --focus '(' >out 2>err
expect_status 1 $? "--focus bad regex"
grep -q "^osprey: --focus '(': " err || fail "--focus bad regex: $(cat err)"

# --inverted: leaf_hot's self time came 3:1 from outer_a and outer_b.
"$osprey" report run.raw.json -o view --inverted >out 2>err
expect_status 0 $? "--inverted"
a=$(grep -A3 ' leaf_hot ' out | grep '← .*outer_a' | grep -Eo '[0-9.]+%' | head -n 1)
b=$(grep -A3 ' leaf_hot ' out | grep '← .*outer_b' | grep -Eo '[0-9.]+%' | head -n 1)
if [ -z "$a" ] || [ -z "$b" ]; then
  fail "--inverted: no callers under leaf_hot: $(cat out)"
else
  awk -v a="${a%\%}" -v b="${b%\%}" 'BEGIN { exit !(a > 60 && a < 90 && b > 10 && b < 40) }' ||
    fail "--inverted: outer_a $a, outer_b $b (expected about 75% and 25%)"
fi
# the whole chain, not only the nearest caller: outer_a ← main ← ... on outer_a's line
grep -A3 ' leaf_hot ' out | grep -q '← .*outer_a .* ← main\b' ||
  fail "--inverted: no chain outer_a ← main under leaf_hot: $(cat out)"

# --list: the source lines of leaf_hot, the loop line with most of the time.
"$osprey" report run.raw.json -o view --list '^leaf_hot$' >out 2>err
expect_status 0 $? "--list"
grep -q "^ROUTINE =* leaf_hot in .*shape.c" out || fail "--list: no ROUTINE line: $(cat out)"
grep -Eq "^ +[0-9.]+m?s +[0-9.]+m?s +(8|9): " out || fail "--list: no timed loop line: $(cat out)"
# (which lines around the loop get no sample is chance: a few may land on the loop's test)
grep -Eq "^ +\. +\. +[0-9]+: +(\{|uint64_t x = sink;|sink = x;|\}|for \(int i = 0; i < n; i\+\+\))$" out ||
  fail "--list: no context line with its source text: $(cat out)"
"$osprey" report run.raw.json -o view --list '^nothing_like_this$' >out 2>err
grep -q "no function with CPU time matches" out || fail "--list no match: $(cat out)"

# --format: only the outputs asked for.
rm -f fmt.*
"$osprey" report run.raw.json -o fmt --format pprof,folded >out 2>err
expect_status 0 $? "--format"
[ "$(printf "%s " fmt.*)" = "fmt.folded fmt.offcpu.folded fmt.pb.gz " ] ||
  fail "--format pprof,folded wrote: $(ls fmt.*)"
"$osprey" report run.raw.json -o fmt --format speedscope,bogus >out 2>err
expect_status 1 $? "--format bogus"
grep -q "^osprey: unknown output format 'bogus'" err || fail "--format bogus: $(cat err)"
"$osprey" report run.raw.json --top 0 >out 2>err
expect_status 2 $? "--top 0"

# osprey diff: a run with outer_b's share raised (more rounds do not change shares, so the
# second program is the first with outer_b three times heavier).
sed 's/leaf_hot(1000000)/leaf_hot(9000000)/' shape.c >shape2.c
clang -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -pthread -o shape2 shape2.c
"$osprey" ./shape2 --profile -o run2 -- 30 >out 2>err
"$osprey" diff run.raw.json run2.raw.json -o cmp >out 2>err
expect_status 0 $? "diff"
grep -Eq "^ +BASE +NEW +DELTA +BASE +NEW +DELTA +FUNCTION$" out || fail "diff: no table: $(cat out)"
for f in cmp.base.speedscope.json cmp.base.pb.gz cmp.new.speedscope.json cmp.new.pb.gz; do
  [ -s "$f" ] || fail "diff: $f missing"
done
grep -q "go tool pprof -diff_base cmp.base.pb.gz cmp.new.pb.gz" out || fail "diff: $(cat out)"
if command -v go >/dev/null 2>&1; then
  HOME=${HOME:-$work} go tool pprof -top -diff_base cmp.base.pb.gz cmp.new.pb.gz >pprof.out 2>&1 ||
    fail "go tool pprof -diff_base: $(cat pprof.out)"
else
  skip_part "go tool pprof -diff_base" "go is not installed"
fi
"$osprey" diff run.raw.json >out 2>err
expect_status 2 $? "diff with one file"

# A 3:1 split between part_a and part_b, both calling spin, becoming 1:3: spin's self share
# stays, the parts' totals move, and the diff shows both parts (each has no self time).
cat >split.c <<'EOF2'
#include <stdlib.h>
static volatile unsigned long sink;
static __attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) sink += i; }
static __attribute__((noinline)) void part_a(long n) { spin(n); sink++; }
static __attribute__((noinline)) void part_b(long n) { spin(n); sink++; }
int main(int argc, char **argv)
{
    long a = atol(argv[1]), b = atol(argv[2]);
    for (int r = 0; r < 10; r++) {
        part_a(a * 500000);
        part_b(b * 500000);
    }
    return 0;
}
EOF2
cp split.c renamed.c
"$osprey" split.c --profile -o split31 -- 60 20 >out 2>err
"$osprey" split.c --profile -o split13 -- 20 60 >out 2>err
"$osprey" diff split31.raw.json split13.raw.json -o splitdiff >out 2>err
expect_status 0 $? "diff of the split"
# part_a: total from about 75% to about 25% of the run (a wide margin for a loaded machine)
awk '$NF == "(split.c)" && $(NF-1) == "part_a" && $6+0 > 55 && $8+0 < 45 { found = 1 }
     END { exit !found }' out || fail "diff: no part_a row moving down: $(cat out)"
awk '$NF == "(split.c)" && $(NF-1) == "part_b" && $6+0 < 45 && $8+0 > 55 { found = 1 }
     END { exit !found }' out || fail "diff: no part_b row moving up: $(cat out)"
# The same program from a renamed file (its scratch binary renamed too): one row per function.
"$osprey" renamed.c --profile -o renamed -- 60 20 >out 2>err
"$osprey" diff split31.raw.json renamed.raw.json -o renameddiff >out 2>err
expect_status 0 $? "diff across a renamed file"
for f in spin part_a part_b main; do
  [ "$(awk -v f="$f" 'NF > 1 && $(NF-1) == f' out | wc -l)" -eq 1 ] || fail "diff across a rename: $f: $(cat out)"
done

# A program whose CPU time goes to system calls (reads of /dev/zero): one line says so and how
# to see the kernel's frames; the CPU-bound shape run says nothing of the kernel.
cat >calls.c <<'EOF2'
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    int fd = open("/dev/zero", O_RDONLY);
    char buf[64];
    long total = 0;
    for (long i = 0; i < 1500000; i++)
        total += read(fd, buf, sizeof buf);
    printf("%ld\n", total);
    return 0;
}
EOF2
"$osprey" calls.c --profile -o calls >out 2>err
expect_status 0 $? "the system-call program"
grep -Eq "^kernel: [0-9.]+% of on-CPU time was inside system calls" err ||
  fail "no kernel: line for a program in read(2): $(cat err)"
grep -q "perf_event_paranoid <= 1" err || fail "the kernel: line says not how: $(cat err)"
"$osprey" report run.raw.json -o shape-again --format folded >out 2>err
if grep -q "^kernel:" out err; then fail "a kernel: line for a CPU-bound program: $(cat out err)"; fi

# A program whose CPU time goes to a call the shim wraps (poll with a timeout on a pipe that is
# always readable): the shim charges the call's CPU time to its stack with poll's first
# instruction as the leaf, no instruction after a system call; the line counts it all the same
# (before, it counted none and said nothing).
cat >polls.c <<'EOF2'
#include <poll.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    int fds[2];
    if (pipe(fds) != 0 || write(fds[1], "x", 1) != 1)
        return 1;
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    long ready = 0;
    for (long i = 0; i < 150000; i++)
        ready += poll(&p, 1, 1000);
    printf("%ld\n", ready);
    return 0;
}
EOF2
"$osprey" polls.c --profile -o polls >out 2>err
expect_status 0 $? "the program in poll"
share=$(sed -n 's/^kernel: \([0-9]*\)\.[0-9]% of on-CPU time was inside system calls.*/\1/p' err)
if [ -z "$share" ] || [ "$share" -lt 50 ]; then
  fail "poll's CPU time not counted inside system calls: $(cat err)"
fi

# Threads whose sampling timers could not be created (RLIMIT_SIGPENDING of 1: every timer holds
# a queued-signal slot) are not sampled, as the shim says; their CPU time, paid where each
# ended, is said to be shown there, not shown as if sampled there, and no share is said to hold.
if command -v prlimit >/dev/null; then
  prlimit --sigpending=1 "$osprey" ./shape --profile -o nosig -- 20 >out 2>err
  expect_status 0 $? "the program without its timers"
  if grep -q "cannot create a thread's sampling timers" err; then
    grep -Eq "^not sampled: .* of CPU time \([0-9.]+%\) of [12] threads? (is|are) shown where" err ||
      fail "no not sampled: line for threads without timers: $(cat err)"
    if grep -q "shares hold" err; then fail "shares said to hold without timers: $(cat err)"; fi
  else
    echo "SKIP: RLIMIT_SIGPENDING 1 left the timers: $(head -n 3 err)"
  fi
fi

finish "all osprey report and diff checks passed"
