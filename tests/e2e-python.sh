#!/usr/bin/env bash
# End-to-end tests of Python frames among the native frames (shim/python.c, daemon/python.c,
# proto/osp_python.h, proto/raw-format.md's "python"):
# - python3.11 running three functions with a known split of the work (50/30/20,
#   tests/python/split.py): the report's outputs name them "qualname (file:line) [py]" above the
#   _PyEval_EvalFrameDefault frame they ran in, with that split within 5 points;
# - a thread blocked in time.sleep and one in queue.get: their waits show their Python sites;
# - Python calling a C extension built here (tests/python/callback.c) calling back into Python
#   (tests/python/nested.py): outer_site [py], the C functions, then inner_site [py], in order;
# - the program's output and exit status unchanged;
# - a program that looks like another Python version (tests/python/fakepy.c, 3.12): refused in
#   one line, profiled as plain;
# - OSPREY_PYTHON=0: no Python frames.
# Usage: e2e-python.sh path/to/osprey
set -uo pipefail
. "$(dirname "$(realpath "$0")")/lib.sh"

osprey=$(realpath "${1:?usage: e2e-python.sh path/to/osprey}")
here=$(dirname "$(realpath "$0")")
python=/usr/bin/python3.11 # Debian 12's python3 itself (not a wrapper in PATH: pyenv's shims)
[ -x "$python" ] || skip "$python is not installed (Debian 12's python3)"
scratch_dir python
chmod 755 "$work"
cd "$work" || exit 1
cp "$here/python/split.py" .

# --- the split of three functions, the waits' sites ----------------------------------------
"$osprey" "$python" --profile -o "$work/split" -- split.py 3 >split.out 2>split.err
expect_status 0 $? "python3.11 split.py"
grep -qx "done" split.out || fail "the program's output changed: $(cat split.out)"
if grep -q "osprey: Python" split.err; then fail "a line about Python: $(cat split.err)"; fi
python3 - split.folded split.offcpu.folded <<'PY' || fail "the Python frames of split.py"
import re, sys
on = {}
for line in open(sys.argv[1]):
    stack, count = line.rsplit(" ", 1)
    on[stack] = on.get(stack, 0) + int(count)
share = {"alpha": 0, "beta": 0, "gamma": 0}
for stack, count in on.items():
    frames = stack.split(";")
    for name in share:
        if any(re.match(r"%s \(.*split\.py:\d+\) \[py\]$" % name, f) for f in frames):
            share[name] += count
    if any(f.endswith("[py]") for f in frames):
        # Python frames sit above the eval frame they ran in (or a function inlined in it).
        i = frames.index(next(f for f in frames if f.endswith("[py]")))
        assert "_PyEval_EvalFrameDefault" in frames[max(0, i - 3):i], frames[:i + 1]
total = sum(share.values())
assert total > 300, "only %d samples in alpha, beta and gamma" % total
for name, want in (("alpha", 50), ("beta", 30), ("gamma", 20)):
    got = 100.0 * share[name] / total
    print("%s %.1f%% (work %d%%)" % (name, got, want))
    assert abs(got - want) <= 5, "%s: %.1f%% of the three, expected %d%% +-5" % (name, got, want)
calls = [s for s in on if re.search(r"main \(.*\) \[py\];alpha \(.*\) \[py\];work \(", s)]
assert calls, "no stack reads main -> alpha -> work"
off = open(sys.argv[2]).read()
assert re.search(r"sleeper_site \(.*split\.py:\d+\) \[py\]", off), "the sleep's site"
assert re.search(r"getter_site \(.*split\.py:\d+\) \[py\];Queue\.get \(.*queue\.py:\d+\) \[py\]",
                 off), "queue.get's site"
PY
python3 - split.raw.json <<'PY' || fail "the raw file's python"
import json, sys
raw = json.load(open(sys.argv[1]))
symbols = raw["python"]["symbols"]
assert all(s["start"] >> 62 == 1 and s["size"] == 1 for s in symbols)
names = {s["name"].split(" ")[0] for s in symbols}
assert {"alpha", "beta", "gamma", "work", "main"} <= names, names
PY

# --- Python calling C calling Python ----------------------------------------------------
if cflags=$(pkg-config --cflags python-3.11 2>/dev/null); then
  # shellcheck disable=SC2086
  cc -O1 -g -fno-omit-frame-pointer -shared -fPIC $cflags "$here/python/callback.c" \
    -o callback.so || fail "cannot build callback.c"
  cp "$here/python/nested.py" .
  "$osprey" "$python" --profile -o "$work/nested" -- nested.py 1.5 >nested.out 2>&1
  expect_status 0 $? "python3.11 nested.py"
  grep -Eq 'outer_site \(.*nested\.py:[0-9]+\) \[py\];([^;]*;)*callback_call;call_back;([^;]*;)*_PyEval_EvalFrameDefault;inner_site \(.*nested\.py:[0-9]+\) \[py\]' \
    nested.folded || fail "no stack reads outer_site [py] -> callback_call -> inner_site [py]"
else
  skip_part "a C extension calling back into Python" "python3.11-dev is not installed"
fi

# --- off: OSPREY_PYTHON=0 -----------------------------------------------------------------
OSPREY_PYTHON=0 "$osprey" "$python" --profile -o "$work/off" -- split.py 0.5 >off.out 2>&1
expect_status 0 $? "python3.11 split.py, Python frames off"
if grep -q "\[py\]" off.folded; then fail "OSPREY_PYTHON=0: Python frames in the stacks"; fi

# --- a version the shim does not read -----------------------------------------------------
cc -O1 -rdynamic "$here/python/fakepy.c" -o fakepy || { fail "cannot build fakepy.c"; finish ""; }
"$osprey" ./fakepy --profile -o "$work/fake" >fake.out 2>fake.err
expect_status 0 $? "fakepy"
grep -q "^fakepy 0$" fake.out || fail "fakepy's output changed: $(cat fake.out)"
grep "osprey: Python" fake.err >fake.line
expect_one_line fake.line "^osprey: Python 3\.12 found: its functions are not shown" \
  "another Python version"

finish "Python functions named with their split; waits at their Python sites; 3.12 refused"
