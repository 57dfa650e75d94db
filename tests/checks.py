"""checks.py — what the end-to-end tests' Python shares; the e2e scripts' inline Python imports
it (lib.sh puts tests/ on PYTHONPATH), and so does bench/unwind/unwind.py.

- `check(ok, message)` says `ok: message` or `FAIL: message` and counts the failures;
  `finish()` exits 1 when one failed, else 0. `where` (set by a test) prefixes each message;
  `verbose = False` leaves out the `ok:` lines (a test that checks every row of a file).
- Raw profiles (proto/raw-format.md): `load_raw(path)`; `weight(row)`, the number of sampling
  periods a sample row stands for (`[t, thread, stack, state]` is one, `[..., weight]` several);
  `periods(raw, keep)`, `on_cpu_seconds(raw)`, `waiting_seconds(raw)`, `on_cpu_rows(raw)`.
- Folded files (`STEM.folded`, `STEM.offcpu.folded`): `read_folded(path)`, each line's frames
  root first (the thread's `NAME-TID` frame included) and its count.
- Stacks deeper than a record: `rooted_past_marker(path, leaf, least, most)`, of a folded
  file's samples through `leaf`, those that reach main past one `[… N frames]` frame.
- Whole stacks: `THREAD_STARTS`, the outermost frame of a stack walked to its end (a program's
  entry or a thread's start); `ROOTS`, those and the start-up frames a tool that stops early
  (perf's frame-pointer walk) leaves outermost.
"""
import json
import re
import sys

# The sample row's fields (proto/raw-format.md, "samples").
STATE_ON_CPU = 0
STATE_WAITING = 1

THREAD_STARTS = ("_start", "clone3", "clone", "start_thread")
ROOTS = frozenset(THREAD_STARTS) | {"__libc_start_main", "__libc_start_call_main", "main",
                                    "__clone", "__clone3"}

failures = []
where = ""
verbose = True


def check(ok, message):
    """One check: prints `  ok: MESSAGE` (stdout) or `  FAIL: MESSAGE` (stderr), the failure
    counted for finish(). Returns whether it held."""
    message = where + message
    if ok:
        if verbose:
            print("  ok: " + message, flush=True)
    else:
        print("  FAIL: " + message, file=sys.stderr, flush=True)
        failures.append(message)
    return bool(ok)


def finish():
    """Exit 1 when any check failed, else 0."""
    sys.exit(1 if failures else 0)


def load_raw(path):
    """A raw profile (STEM.raw.json) as JSON."""
    with open(path) as f:
        return json.load(f)


def weight(row):
    """The sampling periods a sample row stands for."""
    return row[4] if len(row) > 4 else 1


def periods(raw, keep=None):
    """The sampling periods of the sample rows `keep(row)` holds for (all without it)."""
    return sum(weight(row) for row in raw["samples"] if keep is None or keep(row))


def on_cpu(row):
    """Whether a sample row is on CPU."""
    return row[3] == STATE_ON_CPU


def waiting(row):
    """Whether a sample row is waiting (off CPU)."""
    return row[3] == STATE_WAITING


def on_cpu_seconds(raw):
    """Seconds on CPU: the on-CPU rows' periods at the profile's rate."""
    return periods(raw, on_cpu) / raw["rate_hz"]


def waiting_seconds(raw):
    """Seconds waiting: the waiting rows' periods at the profile's rate."""
    return periods(raw, waiting) / raw["rate_hz"]


# Why a stack's walk ended (proto/raw-format.md, "stack_ends"; proto/osp_unwind_step.h): 0 not
# said, 1 the outermost frame (the root reached), 2 no row and no frame pointer, 3 a failed
# check, 4 the depth cap, 5 guessed (frames may be skipped: cut).
END_OUTERMOST = 1


def stack_whole(raw, index):
    """Whether stack `index` of a raw profile reached its root, as its walker said; None when
    the file does not say (an older file, a wait's stack): then the names of its frames tell."""
    ends = raw.get("stack_ends")
    end = ends[index] if ends and index < len(ends) else 0
    return None if end == 0 else end == END_OUTERMOST


def on_cpu_rows(raw):
    """The on-CPU samples of a raw profile: [(weight, stack)], the stack leaf first (pcs)."""
    return [(weight(row), raw["stacks"][row[2]]) for row in raw["samples"] if on_cpu(row)]


def read_folded(path):
    """A folded file: [(frames root first, count)], the thread's frame (NAME-TID) included."""
    rows = []
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            rows.append((stack.split(";"), int(count)))
    return rows


LEFT_OUT = re.compile(r"\[\u2026 (\d+) frames\]")


def rooted_past_marker(path, leaf, least, most):
    """Of a folded file's samples whose stack goes through the function `leaf`: (all of them,
    those that reach main past exactly one "[… N frames]" frame with least <= N <= most), a
    stack deeper than a record folded as its walker keeps it."""
    total = rooted = 0
    for frames, count in read_folded(path):
        names = [fr.split(" ")[0] for fr in frames[1:]]
        if leaf not in names:
            continue
        total += count
        marks = [int(m.group(1)) for fr in frames for m in [LEFT_OUT.fullmatch(fr)] if m]
        if "main" in names and len(marks) == 1 and least <= marks[0] <= most:
            rooted += count
    return total, rooted
