#!/usr/bin/env bash
# End-to-end accuracy of the numbers, on programs of bench/compare/programs/ whose answer is
# known from their construction (bench/compare/compare.py measures the same beside perf):
#   threads       two workers with a 2:1 work split, a thread that sleeps in 10 ms steps and
#                 one blocked on a condvar: on-CPU time splits ~2:1 between hot_a and hot_b,
#                 and the sleeper's brief wakeups are not counted as CPU time;
#   leafloop      a tiny leaf called in a loop: its caller is on the stack of every sample,
#                 prologue and ret included;
#   clock_calls   time in the vDSO: named, not a hex address.
#   compute_read  a blocking read's on-CPU share is its system time, not its waiting time.
# Bounds are wide (sampling is statistical; the machine is shared): they catch the systematic
# errors these programs were written to expose, not noise.
# Usage: e2e-accuracy.sh path/to/osprey path/to/bench/compare/programs
set -uo pipefail

osprey=${1:?usage: e2e-accuracy.sh OSPREY PROGRAMS_DIR}
programs=${2:?usage: e2e-accuracy.sh OSPREY PROGRAMS_DIR}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir accuracy

for name in threads leafloop clock_calls compute_read; do
  "$osprey" "$programs/$name.c" --profile -o "$work/$name" >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: osprey exited $? ($(tail -n 3 "$work/$name.err"))"
done

python3 - "$work" <<'PY' || fail "profile.json numbers out of bounds (see above)"
import json, os, sys
from checks import check, finish, load_raw

work = sys.argv[1]

def functions(name):
    with open(os.path.join(work, name + ".profile.json")) as f:
        profile = json.load(f)
    table = {}
    for fn in profile["functions"]:
        row = table.setdefault(fn["name"], {"self_pct": 0.0, "total_pct": 0.0})
        row["self_pct"] += fn["self_pct"]
        row["total_pct"] = max(row["total_pct"], fn["total_pct"])
    return profile, table


profile, table = functions("threads")
a = table.get("hot_a", {}).get("self_pct", 0.0)
b = table.get("hot_b", {}).get("self_pct", 0.0)
check(a + b >= 90, "threads: hot_a + hot_b = %.1f%% of on-CPU samples (expected ~100%%)" % (a + b))
check(a + b > 0 and 0.55 <= a / (a + b) <= 0.78,
      "threads: hot_a's share of hot_a + hot_b is %.2f (the work split is 2/3)" % (a / (a + b) if a + b else 0))
sleep = table.get("clock_nanosleep", {}).get("self_pct", 0.0)
check(sleep <= 1.5, "threads: %.1f%% on-CPU self time in clock_nanosleep for a thread that "
      "sleeps (its wakeups last microseconds)" % sleep)

profile, table = functions("leafloop")
caller = table.get("scan_buffer", {}).get("total_pct", 0.0)
check(caller >= 99.0, "leafloop: scan_buffer on %.1f%% of stacks (it calls the leaf in "
      "every sample)" % caller)

profile, table = functions("clock_calls")
# The vDSO's exported functions, and its code no symbol covers (named "[vdso]").
vdso = sum(table.get(n, {}).get("self_pct", 0.0) for n in ("__vdso_clock_gettime", "[vdso]"))
hex_self = sum(row["self_pct"] for n, row in table.items() if n.startswith("0x"))
check(vdso >= 20, "clock_calls: the vDSO has %.1f%% self (expected ~60%%)" % vdso)
check(hex_self <= 5, "clock_calls: %.1f%% self time in unnamed (hex) frames" % hex_self)

# compute_read: of the reader's (fiber 0's) on-CPU samples, those whose leaf is read are
# about its system-time share, not the time it spends blocked there.
reader = read_leaf = 0
raw = load_raw(os.path.join(work, "compute_read.raw.json"))
main = [t for t in raw["threads"] if t["fiber"] == 0][0]
root = "%s-%d" % (os.path.basename(raw["exe"]), main["tid"])  # the main thread, as perf names it
with open(os.path.join(work, "compute_read.folded")) as f:
    for line in f:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        if frames[0] != root:
            continue
        reader += int(count)
        if frames[-1] in ("read", "__libc_read", "__GI___libc_read", "__read_nocancel"):
            read_leaf += int(count)
with open(os.path.join(work, "compute_read.out")) as f:
    system_pct = float(f.read().split("reader system time ")[1].split("%")[0])
read_pct = 100.0 * read_leaf / reader if reader else 100.0
# (Both numbers are statistical: getrusage's split of user and system time is itself sampled
# at the kernel's tick, and on a loaded machine either moves by a few points from run to run;
# the blocked time this guards against was half of the samples.)
check(reader > 0 and read_pct <= max(system_pct, 1.0) + 5.0,
      "compute_read: read is the leaf of %.1f%% of the reader's on-CPU samples; its system "
      "time is %.1f%% (a blocked read is not on-CPU time)" % (read_pct, system_pct))

finish()
PY

finish "all accuracy checks passed"
