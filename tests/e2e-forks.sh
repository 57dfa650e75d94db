#!/usr/bin/env bash
# End-to-end: forked children are profiled like threads are ("Forked children" in
# proto/osp_ring.h), run under the preload shim and ospreyd (tests/forks/forks.c):
#   workers   each forked worker writes <out>.<pid>.json (forked, parent_pid its parent),
#             its CPU recorded within 10% in its own function (work_a, work_b, a grandchild's
#             work_grandchild), a sleeping child's 0.3 s recorded as a wait at nanosleep; a
#             fork that execs and a fork that ends at once record at most 3 ms of CPU
#             (usually nothing, and then leave no file of their own); the
#             program's output and exit status (3) are as plain; no collector is left running;
#             with OSPREY_PROFILE_FORKS=0 no child is profiled;
#   prefork   a pre-fork server's two workers: their 40 requests' CPU (serve_request, 10 ms
#             each) recorded within 10%, and the master's report still its own;
#   orphan    through osprey: a child that outlives its parent by 0.3 s is in the run's one
#             report (osprey waits for every collector of the run), with its work_orphan;
#   daemon    through osprey: a grandchild whose parent ended at once (daemon(3)) is reported;
#   escape    through osprey: a process spawned with an empty environment and a forked
#             child's exec without LD_PRELOAD are each named in one line, with the reason.
# Usage: e2e-forks.sh OSPREY SHIM_SO OSPREYD SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-forks.sh OSPREY SHIM_SO OSPREYD SOURCE_DIR}
osprey=$(cd "$(dirname "$osprey")" && pwd)/$(basename "$osprey")
shim=${2:?}
daemon=${3:?}
src=${4:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir forks

build_forks "$src" "$work"

run() { # run NAME MODE [ENV...]: profiled, into $work/NAME/
  local name=$1 mode=$2
  shift 2
  mkdir -p "$work/$name"
  env "$@" OSPREY_DAEMON="$daemon" OSPREY_PROFILE="$work/$name/p.raw.json" LD_PRELOAD="$shim" \
    "$work/forks" "$mode" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.status"
}
"$work/forks" workers >"$work/plain.out" 2>/dev/null
echo $? >"$work/plain.status"
run workers workers
run noforks workers OSPREY_PROFILE_FORKS=0
run prefork prefork
for name in workers noforks prefork; do settle_collectors "$work/$name"; done

expect_status 3 "$(cat "$work/plain.status")" "plain run"
expect_status 3 "$(cat "$work/workers.status")" "profiled run"
expect_status 0 "$(cat "$work/prefork.status")" "profiled pre-fork server"
roles() { sed 's/(.*)//' "$1" | awk '{print $1}' | sort; } # the roles, not what they timed
if [ "$(roles "$work/plain.out")" != "$(roles "$work/workers.out")" ]; then
  fail "the profiled program's output differs: $(cat "$work/workers.out")"
fi
if grep -v "^osprey: " "$work/workers.err" | grep -q .; then
  fail "unexpected stderr: $(cat "$work/workers.err")"
fi

# Each process's folded stacks, for the functions its CPU was spent in.
for f in "$work"/*/p.raw.*.json "$work"/*/p.raw.json; do
  [ -e "$f" ] || continue
  pid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["pid"])' "$f")
  # --pid: a root's report holds the run's every process
  "$osprey" report "$f" --pid "$pid" --format folded -o "${f%.json}" >/dev/null 2>>"$work/report.err" ||
    fail "osprey report $f: $(tail -n 2 "$work/report.err")"
done

python3 - "$work" <<'PY' || fail "forked children wrong (see above)"
import glob, os, sys
from checks import check, finish, load_raw, on_cpu_seconds as on_cpu, waiting_seconds
work = sys.argv[1]
def said(name):
    out = {}
    for line in open(os.path.join(work, name + ".out")):
        role, pid, cpu = line.split()
        out.setdefault(role.split("(")[0], []).append((int(pid), float(cpu), role))
    return out
def raw(name, pid):
    p = os.path.join(work, name, "p.raw.%d.json" % pid)
    return load_raw(p) if os.path.exists(p) else None
def folded_share(name, pid, function, kind="folded"):
    path = os.path.join(work, name, "p.raw.%d.%s" % (pid, kind))
    if not os.path.exists(path):
        path = os.path.join(work, name, "p.raw." + kind)
    total = hit = 0
    for line in open(path):
        stack, n = line.rsplit(" ", 1)
        total += int(n)
        hit += int(n) if any(function in frame for frame in stack.split(";")) else 0
    return hit / total if total else 0.0

w = said("workers")
parent = w["parent"][0][0]
for role, function, ends in (("worker_a", "work_a", "exit"), ("worker_b", "work_b", "_exit"),
                             ("grandchild", "work_grandchild", "exit")):
    pid, cpu, _ = w[role][0]
    doc = raw("workers", pid)
    check(doc is not None, "%s (%s) wrote its own raw file" % (role, ends))
    if doc is None:
        continue
    want_parent = w["worker_a"][0][0] if role == "grandchild" else parent
    check(doc.get("forked") is True and doc.get("parent_pid") == want_parent,
          "%s: forked, parent_pid %s (got %s, %s)" % (role, want_parent, doc.get("forked"),
                                                     doc.get("parent_pid")))
    got = on_cpu(doc)
    check(abs(got - cpu) <= 0.1 * cpu + 0.003,
          "%s: %.3f s on CPU recorded of %.3f s" % (role, got, cpu))
    share = folded_share("workers", pid, function)
    check(share >= 0.9, "%s: %.0f%% of its samples in %s" % (role, 100 * share, function))
sleeper = raw("workers", w["sleeper"][0][0])
check(sleeper is not None, "the sleeping child wrote its raw file")
if sleeper is not None:
    waited = waiting_seconds(sleeper)
    waits = sleeper.get("waits", {})
    # What it slept by its own clock: 0.3 s, and on a loaded machine its wait for a CPU once
    # woken. The kernel times that as the block's when the thread was not yet switched in
    # (0.344 s once), and as preempted time when it was switched in and preempted at once
    # (0.310 s waiting of 0.447 s once): the low side gives way by the preempted time.
    role = w["sleeper"][0][2]
    slept = float(role[role.index("(") + 1:-1]) if "(" in role else 0.3
    preempted = sum(t.get("preempted_ns", 0) for t in sleeper["threads"]) / 1e9
    check(slept - preempted - 0.1 * slept <= waited <= 1.1 * slept,
          "sleeper: %.3f s waiting of %.3f s slept, %.3f s preempted (timed by %s)" %
          (waited, slept, preempted, waits.get("timed_by")))
    site = folded_share("workers", w["sleeper"][0][0], "nanosleep", "offcpu.folded")
    check(site >= 0.95, "sleeper: %.0f%% of its waiting at clock_nanosleep" % (100 * site))
    if site < 0.95:
        os.system("sort -t' ' -k2 -n -r '%s' | head -5 >&2" % os.path.join(
            work, "workers", "p.raw.%d.offcpu.folded" % w["sleeper"][0][0]))
# A fork that ends or execs at once records at most the CPU it used before (a sample or
# two at a random phase of the first period), usually nothing and then no file: the exec'd
# image then has the plain name, else <pid>-<hex>.
quick = raw("workers", w["quick"][0][0])
check(quick is None or on_cpu(quick) <= 0.003, "the fork that ended at once: %s" %
      ("no file" if quick is None else "%.3f s" % on_cpu(quick)))
execer = w["execer"][0][0]
images = [load_raw(p) for p in
          glob.glob(os.path.join(work, "workers", "p.raw.%d.json" % execer)) +
          glob.glob(os.path.join(work, "workers", "p.raw.%d-*.json" % execer))]
true = [d for d in images if d["exe"].endswith("/true")]
fork = [d for d in images if not d["exe"].endswith("/true")]
check(len(true) == 1, "the exec'd /bin/true wrote its own profile (%d)" % len(true))
check(all(on_cpu(d) <= 0.003 for d in fork), "the fork before exec: %s" %
      ("no file" if not fork else "%.3f s" % on_cpu(fork[0])))
root = load_raw(os.path.join(work, "workers", "p.raw.json"))
check(root["pid"] == parent and not root.get("forked"), "the parent's raw file is its own")
check(folded_share("workers", 0, "work_parent") >= 0.8, "the parent's CPU in work_parent")
n = sorted(os.path.basename(p) for p in glob.glob(os.path.join(work, "noforks", "p.raw*.json")))
check(len(n) == 2, "OSPREY_PROFILE_FORKS=0: the parent's and the exec'd image's files only (%s)" % n)

p = said("prefork")
served = total = 0.0
for pid, cpu, role in p["server_worker"]:
    doc = raw("prefork", pid)
    check(doc is not None, "server worker %d wrote its raw file" % pid)
    if doc is None:
        continue
    n = int(role.split("(")[1].rstrip(")"))
    share = folded_share("prefork", pid, "serve_request")
    served += on_cpu(doc) * share
    total += n * 0.010
check(abs(served - total) <= 0.1 * total + 0.01,
      "pre-fork workers: %.3f s recorded in serve_request of %.3f s served" % (served, total))
finish()
PY
(cd "$work" && "$osprey" ./forks --profile -o "$work/orphan-run" -- orphan) \
  >"$work/orphan-run.out" 2>"$work/orphan-run.err" || fail "osprey ./forks orphan: exit $?"
# The parent recorded nothing: the report is the orphan's alone.
# The report again with 40 rows (below): the clock reads under burn are rows of their own and
# can push the orphan's caller out of the first ten.
"$osprey" report "$work/orphan-run.raw.json" -o "$work/orphan-top" --format folded --top 40 \
  >"$work/orphan-top.out" 2>&1 || fail "osprey report orphan-run: exit $?"
grep -Eq "^ *[0-9.]+% +(9[0-9]|100)\.[0-9]%.* work_orphan" "$work/orphan-top.out" ||
  fail "orphan: work_orphan is not in the report: $(cat "$work/orphan-run.err" "$work/orphan-top.out")"
(cd "$work" && "$osprey" ./forks --profile -o "$work/daemon-run" -- daemon) \
  >"$work/daemon-run.out" 2>"$work/daemon-run.err" || fail "osprey ./forks daemon: exit $?"
# The report again with 40 rows: the parent's and the middle process's few samples (fork, the
# atfork handlers) are rows of their own and can push the daemon's caller out of the first ten.
# A daemon not profiled is named so in one line (e2e-forks-daemon holds that it is profiled);
# a daemon missing without that line fails.
"$osprey" report "$work/daemon-run.raw.json" -o "$work/daemon-top" --format folded --top 40 \
  >"$work/daemon-top.out" 2>&1 || fail "osprey report daemon-run: exit $?"
if grep -Eq "^osprey: .*process [0-9]+ .*(is|it is) not profiled" "$work/daemon-run.err"; then
  echo "daemon: named as not profiled: $(grep -E "not profiled" "$work/daemon-run.err")"
else
  grep -Eq "^ *[0-9.]+% +(9[0-9]|100)\.[0-9]%.* work_daemon" "$work/daemon-top.out" ||
    fail "daemon: work_daemon is not in the report: $(cat "$work/daemon-run.err" "$work/daemon-top.out")"
fi
(cd "$work" && "$osprey" ./forks --profile -o "$work/escape-run" -- escape) \
  >"$work/escape-run.out" 2>"$work/escape-run.err" || fail "osprey ./forks escape: exit $?"
spawned=$(awk '/^spawned/ {print $2}' "$work/escape-run.out")
execd=$(awk '/^execd/ {print $2}' "$work/escape-run.out")
grep -q "^process $spawned (/bin/true) ran unprofiled: environment cleared$" "$work/escape-run.err" ||
  fail "escape: no line for the spawn with an empty environment: $(cat "$work/escape-run.err")"
grep -q "^process $execd (/bin/true) ran unprofiled: LD_PRELOAD dropped$" "$work/escape-run.err" ||
  fail "escape: no line for the exec without LD_PRELOAD: $(cat "$work/escape-run.err")"
finish "forked children: profiled as processes of their own, the program unchanged"
