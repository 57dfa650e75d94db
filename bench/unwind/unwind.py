#!/usr/bin/env python3
"""bench/unwind — Osprey's .eh_frame stacks on Debian's own programs, beside perf.

For each program (python3.11, the sqlite3 shell, perl, lua5.4, cc1, redis-server under
redis-benchmark), in one run: an unprofiled run, Osprey (the preload shim at 997 Hz), `perf
record -e cpu-clock -F 997 -g` (frame pointers) and `perf record -e cpu-clock -F 997
--call-graph dwarf,16384` twice (the referee, and its own run-to-run difference). Per program:
the share of samples whose stack reaches the root, mean frames per sample, the top-10
functions' inclusive shares and the top-5 self shares beside perf dwarf's, CPU (program,
collector, post-processing), bytes written per sample and the unwind tables' memory. Then the
cost on one busy thread of frameless code (bench/unwind/workloads/frameless.c) beside the timer
floor (bench/floor/sigfloor.c) and perf dwarf.

Run through bench/unwind/run.sh, which installs what is missing first. Prints Markdown;
--markdown FILE also writes it there."""
import argparse
import collections
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.path.join(HERE, "workloads")
HZ = 997
DWARF_STACK = 16384

sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.dont_write_bytecode = True  # no __pycache__ left in tests/
# The outermost frames of a whole stack (the program's entry, glibc's start-up, a thread's
# start), and the sample weight rule: the end-to-end tests' own (tests/checks.py).
from checks import ROOTS, on_cpu, on_cpu_rows, stack_whole, weight  # noqa: E402
sys.path.insert(0, os.path.dirname(HERE))
from machine import first, machine_lines  # noqa: E402  (bench/machine.py)
from perfscript import perf_frame  # noqa: E402  (bench/perfscript.py)
CLONE_SUFFIX = re.compile(r"(\.(isra|part|constprop|cold|lto_priv|localalias)(\.\d+)?)+$")
DEMANGLED_CLONE = re.compile(r"( \[clone [^\]]*\])+$")
ALIASES = {"__libc_start_main_impl": "__libc_start_main", "__libc_start_main_alias_2":
           "__libc_start_main"}


def strip_parameters(sym):
    """`ns::f(int, char**) const` → `ns::f`: perf prints demangled C++ names without their
    parameters, llvm-symbolizer with them."""
    if sym.endswith(" const"):
        sym = sym[:-len(" const")]
    if not sym.endswith(")") or sym.startswith("("):
        return sym
    depth = 0
    for i in range(len(sym) - 1, -1, -1):
        if sym[i] == ")":
            depth += 1
        elif sym[i] == "(":
            depth -= 1
            if depth == 0:
                return sym[:i] if i > 0 and not sym[:i].endswith("operator") else sym
    return sym


def name_of(sym):
    """A frame's function name as shown, or None for a frame with no name (hex, [unknown]):
    GCC's clone suffixes stripped, C++ parameters dropped."""
    if not sym or sym.startswith("0x") or sym.startswith("[unknown]") or sym == "??":
        return None
    sym = strip_parameters(DEMANGLED_CLONE.sub("", sym))
    sym = CLONE_SUFFIX.sub("", sym)
    return ALIASES.get(sym, sym)


def key_of(name):
    """The key two tools' names are matched by: glibc names one function by several aliases
    (`__libc_pread64` in its DWARF, `__pread64` in its symbol table; `___snprintf_chk` and
    `__snprintf_chk`; `__GI___libc_write`; `__libc_pwrite` and `__libc_pwrite64`), so the
    `__GI_` prefix, leading underscores, a `libc_` prefix and a `64` suffix are dropped."""
    if name is None:
        return None
    if name.startswith("__GI_"):
        name = name[len("__GI_"):]
    name = name.lstrip("_")
    if name.startswith("libc_"):
        name = name[len("libc_"):]
    if name.endswith("64") and not name[:-2].endswith("_"):  # `__libc_pwrite` = `__libc_pwrite64`
        name = name[:-2]
    return KEY_ALIASES.get(name, name)


# Names the symbol table gives a glibc function besides its DWARF name (perf prints
# `__GI___libc_free`, llvm-symbolizer `cfree`).
KEY_ALIASES = {"cfree": "free"}


ROOT_KEYS = {key_of(r) for r in ROOTS}


def reaches_root(outer_names):
    """Whether a stack reaches the root, from the names of its outermost frames (outermost
    first): the outermost is a root, or it has no name and the next one is (a stripped binary's
    `_start` has none: Debian's sqlite3, lua5.4)."""
    if not outer_names:
        return False
    if key_of(outer_names[0]) in ROOT_KEYS:
        return True
    return outer_names[0] is None and len(outer_names) > 1 and \
        key_of(outer_names[1]) in ROOT_KEYS


# --- running -----------------------------------------------------------------------------------

def cpu_of(usage):
    return usage.ru_utime + usage.ru_stime


def run_cmd(argv, env=None, cwd=None, client=None, stdout=subprocess.DEVNULL):
    """Run argv (variables in env added); client(proc), if given, drives it while it runs (a
    server). Returns (wall s, CPU s of the process and the children it reaped, stdout text)."""
    with tempfile.TemporaryFile("w+") as err, tempfile.TemporaryFile("w+") as out:
        start = time.monotonic()
        proc = subprocess.Popen(argv, env=dict(os.environ, **(env or {})), cwd=cwd,
                                stdout=out, stderr=err, stdin=subprocess.DEVNULL, text=True)
        try:
            if client:
                client(proc)
        finally:
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        out.seek(0)
        if code != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({code}): {err.read()[-800:]}")
        return wall, cpu_of(usage), out.read()


class Program:
    """One Debian program and its workload: argv, what to do before each run (fresh files),
    and, for a server, the client that loads it and shuts it down."""

    def __init__(self, name, argv, prepare=None, client=None, note=""):
        self.name, self.argv, self.prepare, self.client, self.note = name, argv, prepare, \
            client, note


def redis_client(port, requests):
    def drive(proc):
        deadline = time.monotonic() + 20
        while True:
            ping = subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True,
                                  text=True)
            if ping.stdout.strip() == "PONG":
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not answer")
            time.sleep(0.1)
        subprocess.run(["redis-benchmark", "-p", str(port), "-q", "-n", str(requests), "-t",
                        "set,get,incr,lpush,lpop"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"],
                       capture_output=True)
    return drive


def cc1_command(scratch):
    """cc1's own command line for `gcc -O2 -c x.c` (gcc forks cc1: cc1 is what is profiled),
    from `gcc -###`, writing its assembly into scratch."""
    source = os.path.join(scratch, "generated.c")
    subprocess.run([sys.executable, os.path.join(WORK, "gen_c.py"), source], check=True)
    listing = subprocess.run(["gcc", "-###", "-O2", "-c", source, "-o",
                              os.path.join(scratch, "generated.o")],
                             capture_output=True, text=True, check=True).stderr
    for line in listing.splitlines():
        words = shlex.split(line)
        if words and words[0].endswith("/cc1"):
            if "-o" in words:
                words[words.index("-o") + 1] = os.path.join(scratch, "generated.s")
            return words, source
    raise RuntimeError("gcc -### named no cc1")


def programs(scratch, only):
    """The programs this machine has, and a line for each one it has not."""
    have, missing = [], []
    db = os.path.join(scratch, "bench.sqlite")

    def fresh_db():
        for suffix in ("", "-journal", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)

    candidates = [
        ("python3.11", "/usr/bin/python3.11",
         lambda: Program("python3.11", ["/usr/bin/python3.11", os.path.join(WORK, "cpu.py"),
                                        "140"], note="pure-Python script (cpu.py 140)")),
        ("sqlite3", "sqlite3",
         lambda: Program("sqlite3", [shutil.which("sqlite3"), db,
                                     ".read " + os.path.join(WORK, "sqlite.sql")],
                         prepare=fresh_db, note="500k rows, 3 indexes (sqlite.sql)")),
        ("perl", "perl",
         lambda: Program("perl", [shutil.which("perl"), os.path.join(WORK, "regex.pl"), "30"],
                         note="regex workload (regex.pl 30)")),
        ("lua5.4", "lua5.4",
         lambda: Program("lua5.4", [shutil.which("lua5.4"), os.path.join(WORK, "loop.lua"),
                                    "45"], note="CPU loop (loop.lua 45)")),
        ("cc1", "gcc", None),
        ("redis-server", "redis-server",
         lambda: Program("redis-server", [shutil.which("redis-server"), "--port", "16399",
                                          "--save", "", "--appendonly", "no", "--daemonize",
                                          "no", "--dir", scratch],
                         client=redis_client(16399, 50000),
                         note="redis-benchmark -n 50000 -t set,get,incr,lpush,lpop")),
    ]
    for name, binary, make in candidates:
        if only and name not in only:
            continue
        if not (os.path.exists(binary) or shutil.which(binary)):
            missing.append(name)
            continue
        if name == "cc1":
            try:
                argv, source = cc1_command(scratch)
            except (RuntimeError, subprocess.CalledProcessError) as e:
                missing.append(f"cc1 ({e})")
                continue
            lines = sum(1 for _ in open(source))
            have.append(Program("cc1", argv, note=f"gcc -O2 -c on a {lines}-line generated C "
                                                  "file (gen_c.py), cc1 run directly"))
        else:
            have.append(make())
    return have, missing


# --- Osprey's side -----------------------------------------------------------------------------

class Symbolizer:
    """Function names for raw addresses, one llvm-symbolizer per image (no inlining: the
    physical function, which is what a root is)."""

    def __init__(self, raw):
        self.images = [i for i in raw["images"] if i.get("text_size")]

    def image_of(self, pc):
        for image in self.images:
            if image["text"] <= pc < image["text"] + image["text_size"]:
                return image
        return None

    def names(self, pcs):
        """{pc: (image path or '?', function name or None)} for raw addresses (return
        addresses already moved back into their call)."""
        by_image = collections.defaultdict(list)
        result = {}
        for pc in pcs:
            image = self.image_of(pc)
            if image is None or not os.path.exists(image["path"]):
                result[pc] = (image["path"] if image else "?", None)
            else:
                by_image[image["path"]].append(pc)
        for path, group in by_image.items():
            image = next(i for i in self.images if i["path"] == path)
            addrs = [hex(pc - image["slide"]) for pc in group]
            out = subprocess.run(["llvm-symbolizer", "--obj=" + path, "--no-inlines",
                                  "--output-style=JSON"], input="\n".join(addrs) + "\n",
                                 capture_output=True, text=True).stdout
            for pc, line in zip(group, out.splitlines()):
                try:
                    sym = json.loads(line)["Symbol"][0]["FunctionName"]
                except (ValueError, KeyError, IndexError, TypeError):
                    sym = None
                result[pc] = (path, name_of(sym) if sym and sym != "??" else None)
        return result


def read_folded(path):
    """STEM.folded: [(count, [names root first])] with the thread's root frame (NAME-TID)
    dropped."""
    out = []
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            frames = frames[1:]
            out.append((int(count), frames))
    return out


def count_names(weighted_stacks):
    """[(weight, [names])] → (inclusive, self, display): weights by name key, each function
    once per stack; display maps a key to a name as printed."""
    inclusive, self_, display = collections.Counter(), collections.Counter(), {}
    for weight, names in weighted_stacks:
        named = [(key_of(n), n) for n in (name_of(x) for x in names) if n]
        for key, name in named:
            display.setdefault(key, name)
        for key in {k for k, _ in named}:
            inclusive[key] += weight
        leaf = name_of(names[0]) if names else None
        if leaf:
            self_[key_of(leaf)] += weight
    return inclusive, self_, display


def analyse_osprey(raw_path, folded_path):
    raw = json.load(open(raw_path))
    rows = on_cpu_rows(raw)
    # How each row's walk ended, where the raw file says (the names below are the fallback).
    whole = [stack_whole(raw, row[2]) for row in raw["samples"] if on_cpu(row)]
    total = sum(w for w, _ in rows)
    sym = Symbolizer(raw)

    def outer_pcs(stack):  # the two outermost frames, outermost first; return addresses - 1
        n = len(stack)
        return [stack[i] - (1 if i else 0) for i in range(n - 1, max(n - 3, -1), -1)]
    named = sym.names({pc for _, stack in rows for pc in outer_pcs(stack)})
    rooted = leaf_only = 0
    cut = collections.Counter()
    for (w, stack), said in zip(rows, whole):
        outer = [named.get(pc, ("?", None)) for pc in outer_pcs(stack)]
        if said if said is not None else reaches_root([name for _, name in outer]):
            rooted += w
        else:
            image, name = outer[0] if outer else ("?", None)
            cut[(os.path.basename(image), name or "(no name)")] += w
            leaf_only += w if len(stack) == 1 else 0
    frames = sum(w * len(s) for w, s in rows) / total if total else 0
    # Before ospreyd has published an image's table its frames take the frame-pointer walk:
    # the start of the run (its longest table build and 50 ms) is told apart from the rest.
    window_ns = (raw.get("collector", {}).get("unwind", {}).get("longest_ms", 0) + 50) * 1e6
    early = collections.Counter()
    for row in raw["samples"]:
        if row[3] != 0:
            continue
        w, stack = weight(row), raw["stacks"][row[2]]
        part = "early" if row[0] < window_ns else "late"
        early[part] += w
        if len(stack) == 1:
            early[part + "_leaf_only"] += w
        if stack and sym.image_of(stack[-1]) is None:
            early[part + "_nowhere"] += w
    folded = read_folded(folded_path)
    folded_total = sum(c for c, _ in folded)
    inclusive, self_, display = count_names((c, names[::-1]) for c, names in folded)
    collector = raw.get("collector", {})
    return dict(samples=total, folded_samples=folded_total, rooted=rooted / total if total
                else 0, leaf_only=leaf_only / total if total else 0, frames=frames, cut=cut,
                inclusive={k: v / folded_total for k, v in inclusive.items()},
                self={k: v / folded_total for k, v in self_.items()}, display=display,
                collector=collector, dropped=raw.get("dropped", 0), rows=len(raw["samples"]),
                bytes=os.path.getsize(raw_path), window=early, window_ms=window_ns / 1e6)


# --- perf's side -------------------------------------------------------------------------------

def perf_script(data):
    """perf script of DATA: (CPU s of perf script, {pid: [(period, [(sym, dso, inlined)] user
    frames leaf first)]}). Kernel frames are dropped: a kernel sample counts for the user
    frames under it, as Osprey (which sees only user space) counts it."""
    with tempfile.TemporaryFile("w+") as out:
        start = time.monotonic()
        proc = subprocess.Popen(["perf", "script", "-i", data, "-F",
                                 "comm,pid,tid,period,ip,sym,dso"], stdout=out,
                                stderr=subprocess.DEVNULL, text=True)
        _, _, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        out.seek(0)
        text = out.read()
    per_pid = collections.defaultdict(list)
    frames = None
    for line in text.splitlines():
        if not line.strip():
            frames = None
            continue
        if not line.startswith("\t") and not line.startswith(" "):
            head = line.split()
            try:
                pid = int(head[-2].split("/")[0])
                period = int(head[-1])
            except (ValueError, IndexError):
                frames = None
                continue
            frames = []
            per_pid[pid].append((period, frames))
            continue
        if frames is None:
            continue
        frame = perf_frame(line)
        if frame is None:
            continue
        ip, symbol, dso = frame
        if ip >= 0xffff800000000000 or dso.startswith("[kernel") or dso.startswith("[guest"):
            continue
        frames.append((symbol, dso, dso == "inlined"))
    return cpu_of(usage), wall, per_pid


def analyse_perf(data):
    post_cpu, post_wall, per_pid = perf_script(data)
    if not per_pid:
        return None
    pid = min(per_pid)  # the process perf started (a child it exec'd is not this program)
    samples = [s for s in per_pid[pid] if s[1]]
    total = len(samples)
    rooted = leaf_only = physical = 0
    cut = collections.Counter()
    for _, frames in samples:
        physical += sum(1 for f in frames if not f[2])
        if reaches_root([name_of(f[0]) for f in frames[::-1][:2]]):
            rooted += 1
        else:
            cut[(os.path.basename(frames[-1][1]), name_of(frames[-1][0]) or "(no name)")] += 1
            leaf_only += 1 if len(frames) == 1 else 0
    inclusive, self_, display = count_names((1, [f[0] for f in frames]) for _, frames in samples)
    program_cpu = sum(p for p, _ in per_pid[pid]) / 1e9 + sum(
        sum(p for p, _ in v) for k, v in per_pid.items() if k != pid) / 1e9
    return dict(samples=total, rooted=rooted / total if total else 0,
                leaf_only=leaf_only / total if total else 0,
                frames=physical / total if total else 0, cut=cut,
                inclusive={k: v / total for k, v in inclusive.items()},
                self={k: v / total for k, v in self_.items()}, display=display,
                post_cpu=post_cpu, post_wall=post_wall,
                program_cpu=program_cpu, bytes=os.path.getsize(data))


# --- one program -------------------------------------------------------------------------------

def profile_program(prog, build, scratch, keep, reuse=False):
    """The five runs of one program and what they measure. With reuse, the files and CPU
    times a kept run left in scratch are read again instead (for working on the analysis)."""
    times_path = os.path.join(scratch, prog.name + ".cpu.json")
    if reuse and os.path.exists(times_path):
        return analyse_program(prog, build, scratch, json.load(open(times_path)))
    shim = os.path.join(build, "shim", "libospreyprof.so")
    daemon = os.path.join(build, "daemon", "ospreyd")
    stem = os.path.join(scratch, prog.name)

    def go(prefix, env=None):
        if prog.prepare:
            prog.prepare()
        return run_cmd(prefix + prog.argv, env=env, client=prog.client, cwd=scratch)[1]

    times = {"plain": go([])}
    times["osprey"] = go([], dict(LD_PRELOAD=shim, OSPREY_DAEMON=daemon,
                                  OSPREY_PROFILE=stem + ".raw.json", OSPREY_PROFILE_HZ=str(HZ)))
    for key, mode in PERF_MODES:
        times[key] = go(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(HZ)] + mode +
                        ["-o", f"{stem}.{key}.data", "--"])
    with open(times_path, "w") as f:
        json.dump(times, f)
    result = analyse_program(prog, build, scratch, times)
    if not keep:
        for key, _ in PERF_MODES:
            os.unlink(f"{stem}.{key}.data")
    return result


PERF_MODES = (("perf_fp", ["-g"]),
              ("perf_dwarf", ["--call-graph", f"dwarf,{DWARF_STACK}"]),
              ("perf_dwarf2", ["--call-graph", f"dwarf,{DWARF_STACK}"]))


def analyse_program(prog, build, scratch, times):
    """What the runs of one program measure: `osprey report` on its raw file, `perf script`
    on each perf.data (both timed: post-processing is part of a profiler's cost)."""
    stem = os.path.join(scratch, prog.name)
    result = {"name": prog.name, "note": prog.note, "plain_cpu": times["plain"]}
    raw = stem + ".raw.json"
    report_wall, report_cpu, _ = run_cmd([os.path.join(build, "tools", "osprey"), "report", raw,
                                          "-o", stem])
    result["osprey"] = analyse_osprey(raw, stem + ".folded")
    result["osprey"].update(program_cpu=times["osprey"], report_cpu=report_cpu,
                            report_wall=report_wall)
    for key, _ in PERF_MODES:
        p = analyse_perf(f"{stem}.{key}.data")
        if p is None:
            raise RuntimeError(f"perf recorded no samples of {prog.name}")
        p["record_total_cpu"] = times[key]
        result[key] = p
    return result


def share_diff(ref, other, names):
    diffs = [abs(ref.get(n, 0.0) - other.get(n, 0.0)) * 100 for n in names]
    return (statistics.mean(diffs), max(diffs)) if diffs else (float("nan"), float("nan"))


def top(shares, n):
    return [k for k, _ in sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def pct(x, digits=1):
    return f"{x * 100:.{digits}f}"


def emit_programs(results, missing, emit):
    emit(f"## Stacks: one run per tool and program, {HZ} Hz")
    emit()
    emit("*To root*: share of on-CPU samples whose outermost frame is one of "
         f"{', '.join(sorted(ROOTS))}, or has no name (a stripped binary's `_start`) with one "
         "of them just inside it (Osprey: the raw addresses symbolized; perf: the user frames "
         "of `perf script`). *Frames*: mean physical user-space frames per "
         "sample (Osprey: raw stack length; perf: user frames of the chain, inlined entries not "
         "counted). *Top-10 incl.*: the ten named functions with the most inclusive time in "
         "perf dwarf's run; mean / max absolute difference of their inclusive shares, in "
         "points. *dwarf vs dwarf*: perf dwarf's second run against its first (its own "
         "run-to-run difference). Names: GCC's clone suffixes (`.isra.0`, `.part.0`, "
         "`.constprop.0`, `.cold`) stripped on both sides, C++ parameter lists dropped, glibc's "
         "aliases matched (`__libc_pread64` = `__pread64`, `___snprintf_chk` = "
         "`__snprintf_chk`, `__GI___libc_write` = `write`); frames without a name (hex, "
         "`[unknown]`) count for nothing.")
    emit()
    emit("| program | samples O / -g / dwarf | to root: Osprey / perf -g / perf dwarf "
         "| frames O / -g / dwarf | top-10 incl. O vs dwarf: mean / max pp "
         "| -g vs dwarf | dwarf vs dwarf | top-5 self O vs dwarf: mean / max pp "
         "| dwarf vs dwarf |")
    emit("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        o, g, d, d2 = r["osprey"], r["perf_fp"], r["perf_dwarf"], r["perf_dwarf2"]
        names = top(d["inclusive"], 10)
        selfs = top(d["self"], 5)
        om, ox = share_diff(d["inclusive"], o["inclusive"], names)
        gm, gx = share_diff(d["inclusive"], g["inclusive"], names)
        dm, dx = share_diff(d["inclusive"], d2["inclusive"], names)
        sm, sx = share_diff(d["self"], o["self"], selfs)
        s2m, s2x = share_diff(d["self"], d2["self"], selfs)
        emit(f"| {r['name']} | {o['samples']} / {g['samples']} / {d['samples']} "
             f"| {pct(o['rooted'])}% / {pct(g['rooted'])}% / {pct(d['rooted'])}% "
             f"| {o['frames']:.1f} / {g['frames']:.1f} / {d['frames']:.1f} "
             f"| {om:.2f} / {ox:.2f} | {gm:.2f} / {gx:.2f} | {dm:.2f} / {dx:.2f} "
             f"| {sm:.2f} / {sx:.2f} | {s2m:.2f} / {s2x:.2f} |")
    emit()
    if missing:
        emit("Not measured (not installed and could not be installed): " + ", ".join(missing))
        emit()

    emit("## CPU, bytes and memory")
    emit()
    emit("*Program*: the profiled process's own CPU (wait4; for perf, the sum of its samples' "
         "cpu-clock periods). *Collector*: ospreyd's `collector.cpu_ms`; perf record's own "
         "CPU (perf record's wait4 CPU, which includes the program's, minus the program's). "
         "*Post*: `osprey report RAW -o STEM` (every output, llvm-symbolizer included) and "
         "`perf script` of the perf.data, CPU and (wall) seconds. *Bytes per sample*: the "
         "raw file (or perf.data) over on-CPU samples (Osprey: sampling periods). *Tables*: "
         "`collector.unwind` (images with a table / failed, rows, bytes of the tables in "
         "shared memory, the longest build) and ospreyd's peak RSS.")
    emit()
    emit("| program | unprofiled CPU s | Osprey: program / ospreyd / report s "
         "| perf -g: program / perf record / perf script s "
         "| perf dwarf: program / perf record / perf script s "
         "| bytes per sample O / -g / dwarf | unwind tables: images (failed), rows, KiB, "
         "longest ms | ospreyd peak RSS KiB |")
    emit("|---|---|---|---|---|---|---|---|")
    for r in results:
        o, g, d = r["osprey"], r["perf_fp"], r["perf_dwarf"]
        c = o["collector"]
        u = c.get("unwind", {})

        def perf_cells(p):
            own = p["record_total_cpu"] - p["program_cpu"]
            return (f"{p['program_cpu']:.2f} / {own:.2f} / {p['post_cpu']:.2f} "
                    f"({p['post_wall']:.1f})")
        emit(f"| {r['name']} | {r['plain_cpu']:.2f} "
             f"| {o['program_cpu']:.2f} / {c.get('cpu_ms', 0) / 1000:.2f} / "
             f"{o['report_cpu']:.2f} ({o['report_wall']:.1f}) | {perf_cells(g)} "
             f"| {perf_cells(d)} "
             f"| {o['bytes'] / max(o['samples'], 1):.0f} / {g['bytes'] / max(g['samples'], 1):.0f}"
             f" / {d['bytes'] / max(d['samples'], 1):.0f} "
             f"| {u.get('images', '?')} ({u.get('failed', '?')}), {u.get('rows', '?')}, "
             f"{u.get('bytes', 0) / 1024:.0f}, {u.get('longest_ms', '?')} "
             f"| {c.get('peak_rss_kb', '?')} |")
    emit()

    emit("## Per program: the top-10 inclusive functions (perf dwarf's), shares in %")
    emit()
    for r in results:
        o, g, d, d2 = r["osprey"], r["perf_fp"], r["perf_dwarf"], r["perf_dwarf2"]
        emit(f"### {r['name']} — {r['note']}")
        emit()
        emit("| function | perf dwarf | perf dwarf (2nd) | Osprey | perf -g |")
        emit("|---|---|---|---|---|")
        for n in top(d["inclusive"], 10):
            emit(f"| `{d['display'].get(n, n)}` | {pct(d['inclusive'][n])} "
                 f"| {pct(d2['inclusive'].get(n, 0))} | {pct(o['inclusive'].get(n, 0))} "
                 f"| {pct(g['inclusive'].get(n, 0))} |")
        emit()
        emit("Self, top 5 of perf dwarf: " + "; ".join(
            f"`{d['display'].get(n, n)}` {pct(d['self'][n])} / Osprey {pct(o['self'].get(n, 0))}"
            for n in top(d["self"], 5)))
        emit()
        for label, p in (("Osprey", o), ("perf dwarf", d)):
            total = p["samples"]
            if p["cut"] and total:
                worst = p["cut"].most_common(4)
                emit(f"{label}'s stacks not reaching the root ({pct(1 - p['rooted'])}%; the leaf "
                     f"alone: {pct(p['leaf_only'])}%) end in: " +
                     "; ".join(f"{img or '?'} `{fn}` {pct(w / total)}%" for (img, fn), w in worst))
                emit()
        wnd, total = o["window"], o["samples"]
        if total:
            emit(f"Osprey, the first {o['window_ms']:.0f} ms (its longest table build + 50 ms): "
                 f"{pct(wnd['early'] / total)}% of the samples, the leaf alone "
                 f"{pct(wnd['early_leaf_only'] / total)}%, outermost address in no image (a walk "
                 f"gone wrong) {pct(wnd['early_nowhere'] / total)}%; after it: the leaf alone "
                 f"{pct(wnd['late_leaf_only'] / total)}%, in no image "
                 f"{pct(wnd['late_nowhere'] / total)}% (all of the program's samples).")
            emit()
        if o.get("dropped"):
            emit(f"Osprey dropped {o['dropped']} samples.")
            emit()


# --- cost --------------------------------------------------------------------------------------

def build_cost(scratch):
    out = {}
    src = os.path.join(WORK, "frameless.c")
    for key, flags in (("frameless", []),
                       ("fp", ["-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"])):
        exe = os.path.join(scratch, f"cost-{key}")
        subprocess.run(["gcc", "-O2", "-g"] + flags + [src, "-o", exe], check=True)
        out[key] = exe
    floor = os.path.join(scratch, "libsigfloor.so")
    subprocess.run(["gcc", "-O2", "-fPIC", "-shared", "-pthread",
                    os.path.join(ROOT, "bench", "floor", "sigfloor.c"), "-o", floor],
                   check=True)
    out["floor"] = floor
    return out


def cpu_ns_line(stdout):
    for line in stdout.splitlines():
        if line.startswith("cpu_ns "):
            return int(line.split()[1]) / 1e9
    raise RuntimeError("the workload printed no cpu_ns line")


def section_cost(build, scratch, reps, rounds, emit):
    exes = build_cost(scratch)
    shim = os.path.join(build, "shim", "libospreyprof.so")
    daemon = os.path.join(build, "daemon", "ospreyd")
    configs = [("frameless", "unprofiled", 0), ("frameless", "timer floor", 997),
               ("frameless", "osprey", 997), ("frameless", "perf dwarf", 997),
               ("frameless", "timer floor", 10000), ("frameless", "osprey", 10000),
               ("frameless", "perf dwarf", 10000),
               ("fp", "unprofiled", 0), ("fp", "timer floor", 997), ("fp", "osprey", 997),
               ("fp", "timer floor", 10000), ("fp", "osprey", 10000)]
    results = collections.defaultdict(list)
    rooted = collections.defaultdict(list)
    for rep in range(reps):
        for build_key, tool, hz in configs:
            argv = [exes[build_key], str(rounds)]
            out = os.path.join(scratch, f"cost-{build_key}-{tool.replace(' ', '_')}-{hz}")
            env, prefix = {}, []
            if tool == "timer floor":
                env = dict(LD_PRELOAD=exes["floor"], SIGFLOOR_HZ=str(hz), SIGFLOOR_TIMER="1",
                           SIGFLOOR_COUNT=out)
            elif tool == "osprey":
                env = dict(LD_PRELOAD=shim, OSPREY_DAEMON=daemon, OSPREY_PROFILE=out,
                           OSPREY_PROFILE_HZ=str(hz))
            elif tool == "perf dwarf":
                prefix = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz),
                          "--call-graph", f"dwarf,{DWARF_STACK}", "-o", out, "--"]
            _, total, stdout = run_cmd(prefix + argv, env=env)
            program = cpu_ns_line(stdout)
            signals = samples = None
            if tool == "osprey":
                raw = json.load(open(out))
                total += raw.get("collector", {}).get("cpu_ms", 0) / 1000
                signals = len(raw["samples"])  # rows: at most one per signal handled
                samples = sum(w for w, _ in on_cpu_rows(raw))
                if rep == 0:
                    rooted[(build_key, hz)].append(osprey_rooted(raw))
            elif tool == "timer floor":
                signals = int(open(out).read())
            results[(build_key, tool, hz)].append(dict(program=program, total=total,
                                                       signals=signals, samples=samples))
            if os.path.exists(out):
                os.unlink(out)
    med = {k: {f: statistics.median([r[f] for r in v]) if v[0][f] is not None else None
               for f in v[0]} for k, v in results.items()}
    emit(f"## Cost: one busy thread, `frameless {rounds}`, median of {reps}")
    emit()
    emit("bench/unwind/workloads/frameless.c (main → outer → middle → leaf_a / leaf_b, none "
         "inlined), built `gcc -O2 -g` (no frame pointer anywhere: `middle` has no frame at "
         "all) and `gcc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer`. The "
         "*timer floor* is bench/floor/sigfloor.c with `SIGFLOOR_TIMER=1`: the thread's own "
         "periodic timer interrupting it in place to an empty handler, the floor for a "
         "sampler whose threads sample themselves. *Total* = the process's CPU (wait4) plus "
         "ospreyd's `collector.cpu_ms`; for perf, perf record's wait4 CPU (perf and the "
         "program). Added = total − the unprofiled total of the same build. Runs of every "
         "configuration interleaved rep by rep.")
    emit()
    emit("*Signals*: per second of the program's CPU, SIGPROFs its handler ran (the floor's "
         "count; Osprey's raw rows, at most one per signal, so a lower bound); *samples*: "
         "sampling periods Osprey paid (the sum of its on-CPU weights; a thread that shares "
         "a loaded CPU is interrupted less often and pays several periods per signal, while "
         "the floor's wall-clock timer keeps interrupting it at the rate). *Per signal*: "
         "added CPU over signals handled.")
    emit()
    emit("| build | tool | Hz | signals per CPU-s | samples per CPU-s | program CPU s "
         "| total CPU s | ×unprofiled | added ms | added ÷ timer floor's | per signal µs "
         "| ÷ floor's |")
    emit("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for build_key, tool, hz in configs:
        m = med[(build_key, tool, hz)]
        base = med[(build_key, "unprofiled", 0)]
        added = m["total"] - base["total"]
        floor = med.get((build_key, "timer floor", hz))
        ratio = "–"
        if tool != "unprofiled" and floor and floor["total"] > base["total"]:
            ratio = f"{added / (floor['total'] - base['total']):.2f}"
        sig = f"{m['signals'] / m['program']:.0f}" if m["signals"] else "–"
        paid = f"{m['samples'] / m['program']:.0f}" if m["samples"] else "–"
        per = per_floor = "–"
        if m["signals"]:
            per_signal = added / m["signals"]
            per = f"{per_signal * 1e6:.1f}"
            if floor and floor["signals"] and tool != "timer floor":
                floor_per = (floor["total"] - base["total"]) / floor["signals"]
                per_floor = f"{per_signal / floor_per:.2f}" if floor_per > 0 else "–"
        emit(f"| {build_key} | {tool} | {hz or '–'} | {sig} | {paid} | {m['program']:.3f} "
             f"| {m['total']:.3f} | {m['total'] / base['total']:.3f} | {added * 1000:.0f} "
             f"| {ratio} | {per} | {per_floor} |")
    emit()
    for (build_key, hz), values in sorted(rooted.items()):
        share, frames = values[0]
        emit(f"- Osprey's stacks, {build_key} build at {hz} Hz (first rep): {pct(share)}% reach "
             f"`main`, {frames:.2f} frames per sample (the whole chain is 7: leaf_a or leaf_b, "
             "middle, outer, main, __libc_start_call_main, __libc_start_main, _start)")
    emit()


def osprey_rooted(raw):
    """(share of on-CPU samples whose stack reached its root — as its walk said, or in an older
    file, holds `main` —, mean frames) of a raw profile."""
    rows = on_cpu_rows(raw)
    whole = [stack_whole(raw, row[2]) for row in raw["samples"] if on_cpu(row)]
    total = sum(w for w, _ in rows)
    sym = Symbolizer(raw)
    pcs = {pc - (1 if i else 0) for _, s in rows for i, pc in enumerate(s)}
    names = sym.names(pcs)
    hit = 0
    for (w, s), said in zip(rows, whole):
        if said if said is not None else any(
                names.get(pc - (1 if i else 0), ("", None))[1] == "main"
                for i, pc in enumerate(s)):
            hit += w
    return (hit / total if total else 0, sum(w * len(s) for w, s in rows) / total
            if total else 0)


# --- main --------------------------------------------------------------------------------------

def header(argv, build):
    versions = "; ".join(filter(None, [
        first(["perf", "--version"]), first(["gcc", "--version"]),
        "python " + first(["/usr/bin/python3.11", "--version"]).split()[-1]
        if os.path.exists("/usr/bin/python3.11") else None,
        "sqlite " + first(["sqlite3", "--version"]).split()[0] if shutil.which("sqlite3")
        else None,
        first(["lua5.4", "-v"]) if shutil.which("lua5.4") else None,
        first(["redis-server", "--version"]) if shutil.which("redis-server") else None]))
    return machine_lines() + [
            f"- tree: {first(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'])}, built in "
            f"`{os.path.relpath(build, ROOT)}`",
            f"- versions: {versions}",
            f"- command: `{' '.join(['bash', 'bench/unwind/run.sh'] + argv)}`"]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--only", default="", help="comma-separated programs (python3.11, "
                        "sqlite3, perl, lua5.4, cc1, redis-server) or 'none'")
    parser.add_argument("--no-cost", action="store_true", help="skip the cost section")
    parser.add_argument("--cost-reps", type=int, default=7)
    parser.add_argument("--cost-rounds", type=int, default=40000)
    parser.add_argument("--keep", help="keep raw files, folded stacks and perf.data here")
    parser.add_argument("--markdown", help="also write the tables here")
    parser.add_argument("--reuse", action="store_true", help="with --keep: analyse the files "
                        "a kept run left there again instead of running the programs")
    parser.add_argument("--argv", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    lines = []

    def emit(line=""):
        print(line, flush=True)
        lines.append(line)

    started = time.monotonic()
    for line in header(shlex.split(args.argv), build):
        emit(line)
    emit()
    scratch = args.keep or tempfile.mkdtemp(prefix="osprey-unwind-")
    os.makedirs(scratch, exist_ok=True)
    try:
        only = set(args.only.split(",")) if args.only else set()
        if only != {"none"}:
            progs, missing = programs(scratch, only)
            results = []
            for prog in progs:
                print(f"# {prog.name}: {' '.join(prog.argv)}", file=sys.stderr, flush=True)
                results.append(profile_program(prog, build, scratch, bool(args.keep),
                                               args.reuse and bool(args.keep)))
            emit_programs(results, missing, emit)
        if not args.no_cost:
            section_cost(build, scratch, args.cost_reps, args.cost_rounds, emit)
        emit(f"Run took {time.monotonic() - started:.0f} s; load average at the end: "
             f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
