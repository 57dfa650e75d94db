#!/usr/bin/env bash
# End-to-end: whole stacks through code without frame pointers, from the unwind tables ospreyd
# builds out of .eh_frame (shim/README.md, "Stacks without frame pointers"). Programs from
# tests/unwind/, built here the way distributions build (no frame pointers):
#   frameless (gcc -O2; clang -O2 -fomit-frame-pointer), through the preload shim and linked
#             with the archive: main -> run_for -> middle -> leaf_a / leaf_b (3:1), and a
#             thread's worker -> run_for -> ...; >= 97% of samples reach main or the thread's
#             start, and the split is the one built;
#   plugin    the same program dlopens a frameless module mid-run: its samples reach main;
#   waits     pthread_join, pthread_cond_wait, pthread_mutex_lock and read inside glibc: each
#             waiting stack reaches its site and main or the thread's start;
#   throw     a C++ program throwing and catching at 10 kHz: its output and status unchanged,
#             its stacks reach main;
#   python3   Debian's interpreter on a pure-Python script: stacks reach Py_RunMain (these two
#             once ospreyd has published the rows of the objects mapped at start);
#   jit       code in an anonymous executable mapping (neither CFI nor frame pointers): the
#             report says what share of the samples' stacks end early, and where.
# Usage: e2e-unwind.sh OSPREY SHIM_ARCHIVE OSPREYD SOURCE_DIR
set -uo pipefail

osprey=${1:?usage: e2e-unwind.sh OSPREY SHIM_ARCHIVE OSPREYD SOURCE_DIR}
archive=${2:?}
daemon=${3:?}
src=${4:?}
# shellcheck source=tests/lib.sh
. "$(dirname "$(realpath "$0")")/lib.sh"
scratch_dir unwind

build() { # build OUT COMPILER FLAGS... -- SOURCES...
  local out=$1 compiler=$2
  shift 2
  "$compiler" "$@" -o "$work/$out" 2>"$work/$out.build" || fail "$out: build failed: $(cat "$work/$out.build")"
}
build frameless-gcc gcc -O2 -g "$src/frameless.c" -lpthread -ldl
build frameless-clang clang -O2 -g -fomit-frame-pointer "$src/frameless.c" -lpthread -ldl
build frameless-archive gcc -O2 -g "$src/frameless.c" -Wl,--whole-archive "$archive" \
  -Wl,--no-whole-archive -lpthread -ldl -lrt
build plugin.so gcc -O2 -g -shared -fPIC "$src/plugin.c"
build throw g++ -O2 -g "$src/throw.cpp"
build waits gcc -O2 -g "$src/waits.c" -lpthread
build jit gcc -O2 -g "$src/jit.c"

profile() { # profile NAME PROGRAM ARGS...: the preload shim, through the CLI
  local name=$1 program=$2
  shift 2
  "$osprey" "$program" --profile -o "$work/$name" -- "$@" >"$work/$name.out" 2>"$work/$name.err" ||
    fail "$name: osprey exited $? ($(tail -n 3 "$work/$name.err"))"
}
profile gcc "$work/frameless-gcc" 1.5
profile clang "$work/frameless-clang" 1.5
profile plugin "$work/frameless-gcc" plugin "$work/plugin.so" 1.5
OSPREY_PROFILE_HZ=10000 profile throw "$work/throw"
profile waits "$work/waits"
if [ "$(uname -m)" = x86_64 ]; then
  profile jit "$work/jit"
  cat "$work/jit.out" "$work/jit.err" >"$work/jit.all" # the report, wherever it went
  grep -Eq "^stacks: (9[0-9]|100)\.[0-9]% of on-CPU samples end before main" "$work/jit.all" ||
    fail "jit: no line says the stacks were cut: $(grep -E '^stacks|^sampling' "$work/jit.all")"
  grep -Eq "no object \(a JIT's\) (9[0-9]|100)\.[0-9]%" "$work/jit.all" ||
    fail "jit: the line does not say where: $(grep -A1 '^stacks' "$work/jit.all")"
fi
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)
profile python "$python" "$src/script.py"

# The checks of reaching main hold for the samples after the rows were published (lib.sh,
# after_ready); the whole run's share is printed beside them.
after_ready throw
after_ready python

# The archive form: the program boots the shim itself.
OSPREY_DAEMON=$daemon OSPREY_PROFILE="$work/archive.raw.json" "$work/frameless-archive" 1.5 \
  >"$work/archive.out" 2>"$work/archive.err" || fail "archive: exit status $?"
"$osprey" report "$work/archive.raw.json" -o "$work/archive" >/dev/null 2>"$work/archive.err" ||
  fail "archive: osprey report exited $? ($(tail -n 3 "$work/archive.err"))"

# The program's own output is untouched.
"$work/throw" >"$work/throw.plain" 2>&1
cmp -s "$work/throw.plain" "$work/throw.out" ||
  fail "throw: output differs under profiling: $(cat "$work/throw.out")"

python3 - "$work" "$python" <<'PY' || fail "stacks cut or split wrong (see above)"
import os, sys
from checks import THREAD_STARTS, check, finish, read_folded

work, python = sys.argv[1], sys.argv[2]

def folded(name, kind="folded"):
    """Rows of a folded file: [(frames root first, the thread's frame left out; count)]."""
    return [([fr.split(" ")[0] for fr in frames[1:]], count)
            for frames, count in read_folded(os.path.join(work, name + "." + kind))]

def share(rows, keep, where):
    total = sum(c for fr, c in rows if keep(fr))
    hit = sum(c for fr, c in rows if keep(fr) and where(fr))
    return hit, total

def leaf_of(frames):
    return frames[-1] if frames else ""

for name in ("gcc", "clang", "archive"):
    rows = folded(name)
    ours = lambda fr: any(f in ("leaf_a", "leaf_b", "middle", "run_for") for f in fr)
    rooted, total = share(rows, ours, lambda fr: "main" in fr or "worker" in fr)
    check(total >= 500, "%s: %d on-CPU samples in the program's functions (want >= 500)" % (name, total))
    check(total and rooted / total >= 0.97,
          "%s: %.1f%% of samples in run_for/middle/leaves reach main or worker (want >= 97%%)"
          % (name, 100.0 * rooted / total if total else 0))
    chained, _ = share(rows, ours, lambda fr: "run_for;middle;leaf_" in ";".join(fr))
    check(total and chained / total >= 0.9,
          "%s: %.1f%% of samples show run_for;middle;leaf_*" % (name, 100.0 * chained / total if total else 0))
    a = sum(c for fr, c in rows if leaf_of(fr) == "leaf_a")
    b = sum(c for fr, c in rows if leaf_of(fr) == "leaf_b")
    check(a + b and 0.67 <= a / (a + b) <= 0.83,
          "%s: leaf_a has %.2f of leaf_a + leaf_b (built 0.75)" % (name, a / (a + b) if a + b else 0))
    threads = set()
    with open(os.path.join(work, name + ".folded")) as f:
        for line in f:
            if ";worker;" in line:
                threads.add(line.split(";")[0])
    check(threads, "%s: stacks of the worker thread reach its start routine" % name)

rows = folded("plugin")
in_plugin = lambda fr: "plugin_leaf" in fr or "plugin_work" in fr
rooted, total = share(rows, in_plugin, lambda fr: "run_plugin" in fr and "main" in fr)
check(total >= 300, "plugin: %d samples in the dlopen'd module (want >= 300)" % total)
check(total and rooted / total >= 0.95,
      "plugin: %.1f%% of the module's samples reach run_plugin and main" % (100.0 * rooted / total if total else 0))

rows = folded("waits", "offcpu.folded")
for site, root in (("join_site", "main"), ("consumer_wait", "consumer"), ("read_site", "reader"),
                   ("lock_site", "locker")):
    waited = sum(c for fr, c in rows if site in fr)
    rooted = sum(c for fr, c in rows if site in fr and root in fr and
                 (fr[0] in THREAD_STARTS or root == "main"))
    check(waited >= 500 and rooted == waited,
          "waits: %d periods waited in %s, %d of them under %s and the stack's root" % (waited, site, rooted, root))

def rooted_after_ready(name, root, want, label):
    """Of the samples taken once the rows were ready, the share whose stack holds root."""
    rooted, total = share(folded(name + "-ready"), lambda fr: True, lambda fr: root in fr)
    whole_rooted, whole = share(folded(name), lambda fr: True, lambda fr: root in fr)
    check(total >= want, "%s: %d samples once the unwind rows were ready (want >= %d)"
          % (label, total, want))
    check(total and rooted / total >= 0.97,
          "%s: %.1f%% of those reach %s (want >= 97%%; the whole run: %.1f%% of %d)"
          % (label, 100.0 * rooted / total if total else 0, root,
             100.0 * whole_rooted / whole if whole else 0, whole))

rooted_after_ready("throw", "main", 1000, "throw (10 kHz)")
rooted_after_ready("python", "Py_RunMain", 500, "python (%s)" % python)

finish()
PY

finish "stacks through frameless code: gcc, clang, archive, dlopen'd plugin, C++ exceptions, python3"
