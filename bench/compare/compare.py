#!/usr/bin/env python3
"""Osprey beside perf: per-function self% on the same programs, and the program untouched.

Usage: python3 bench/compare/compare.py [--build DIR] [--only NAME,...] [--keep DIR]
                                        [--threshold PP] [--markdown FILE]

For each program in bench/compare/programs/ (built with clang -O2 -g, frame pointers in every
function, -pthread):
  plain   run it alone: stdout and exit status are the reference
  perf    perf record -e cpu-clock -F 997 -g; the leaf of every sample of the profiled process
          (kernel frames folded into the user frame below them: Osprey sees the user pc only)
  osprey  the preload shim (OSPREY_PROFILE=raw, LD_PRELOAD=libospreyprof.so), then
          `osprey report RAW -o STEM`; self% from STEM.profile.json functions[]
and prints, per program: stdout/exit identical?, sample counts, and the top functions with
perf self%, osprey self%, the difference (flagged beyond --threshold percentage points), and
the same for total% (function anywhere on the stack).

Like with like: Osprey names a sample after the innermost INLINED function (llvm-symbolizer
--inlining). perf's own report names the outer symbol. So perf's addresses are symbolized
here with the same llvm-symbolizer --inlining (leaf pc as is, return addresses -1), and both
columns count inlined functions as functions. Percentages are over on-CPU samples of the
profiled process (Osprey's denominator); perf samples in the kernel count for the user frame
they interrupted, and the share that was in the kernel is shown as "kernel%".

Nothing here asserts: shared machines are noisy. Exit status 0 unless the harness itself fails.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from perfscript import perf_samples  # noqa: E402  (bench/perfscript.py)
FLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-pthread"]

# name: (sources, extra link args). plugin.so is built beside the binaries for dlplugin.
PROGRAMS = {
    "fib": ["fib.c"],
    "smallfuncs": ["smallfuncs.c"],
    "leafloop": ["leafloop.c"],
    "inline_heavy": ["inline_heavy.c"],
    "libc_heavy": ["libc_heavy.c"],
    "malloc_churn": ["malloc_churn.c"],
    "threads": ["threads.c"],
    "forkexec": ["forkexec.c"],
    "signals": ["signals.c"],
    "dlplugin": ["dlplugin.c"],
    "exit_code": ["exit_code.c"],
    "killed": ["killed.c"],
    "clock_calls": ["clock_calls.c"],
    "thread_churn": ["thread_churn.c"],
}
# name: flags added to FLAGS (a non-PIE build of a program above, same sources)
VARIANTS = {"smallfuncs_nopie": ("smallfuncs", ["-no-pie", "-fno-pie"])}


def build(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    src = os.path.join(HERE, "programs")
    subprocess.run(["clang"] + FLAGS + ["-fPIC", "-shared", os.path.join(src, "plugin.c"),
                    "-o", os.path.join(out_dir, "plugin.so")], check=True)
    exes = {}
    for name, sources in PROGRAMS.items():
        exe = os.path.join(out_dir, name)
        subprocess.run(["clang"] + FLAGS + [os.path.join(src, s) for s in sources] +
                       ["-o", exe, "-ldl"], check=True)
        exes[name] = exe
    for name, (base, flags) in VARIANTS.items():
        exe = os.path.join(out_dir, name)
        subprocess.run(["clang"] + FLAGS + flags + [os.path.join(src, s) for s in PROGRAMS[base]] +
                       ["-o", exe, "-ldl"], check=True)
        exes[name] = exe
    return exes


def run(cmd, env=None, cwd=None):
    """Run cmd; return (stdout, exit code as the shell shows it: 128+sig when killed, stderr,
    cpu seconds of the children)."""
    before = os.times()
    proc = subprocess.run(cmd, env=dict(os.environ, **(env or {})), cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + \
          (after.children_system - before.children_system)
    rc = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
    return proc.stdout, rc, proc.stderr, cpu


# ---- symbolization of perf's addresses, with the same tool and options as Osprey ----

class Symbolizer:
    """llvm-symbolizer --inlining over (object, file address) pairs, cached per object."""

    def __init__(self):
        self.cache = {}

    def names(self, obj, addresses):
        """Return {address: [innermost function, ..., outermost]} for file addresses in obj."""
        cache = self.cache.setdefault(obj, {})
        todo = sorted(a for a in set(addresses) if a not in cache)
        if todo and os.path.isfile(obj):
            proc = subprocess.run(
                ["llvm-symbolizer", "--inlining", "--output-style=JSON", "--obj=" + obj],
                input="".join("0x%x\n" % a for a in todo), capture_output=True, text=True)
            for a, line in zip(todo, proc.stdout.splitlines()):
                try:
                    frames = json.loads(line)["Symbol"]
                except (ValueError, KeyError):
                    frames = []
                names = [f.get("FunctionName", "??") for f in frames]
                names = [n for n in names if n and n != "??"]
                cache[a] = names
        return {a: cache.get(a, []) for a in addresses}


KERNEL = ("[kernel.kallsyms]", "[guest.kernel.kallsyms]")


def perf_profile(exe, args, workdir, symbolizer):
    """perf record the program; return stdout, rc and per-function counts of the root process."""
    data = os.path.join(workdir, "perf.data")
    out, rc, err, cpu = run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "997", "-g",
                             "-o", data, "--", exe] + args)
    samples = [(pid, frames) for _, pid, frames in perf_samples(data)]
    if not samples:
        return out, rc, None
    root = min(pid for pid, _ in samples)  # perf's child: the first process, lowest pid
    stacks = []
    kernel = 0
    for pid, frames in samples:
        if pid != root:
            continue
        user = [f for f in frames if f[2] not in KERNEL]
        if len(user) < len(frames) and frames and frames[0][2] in KERNEL:
            kernel += 1
        stacks.append(user)
    # Symbolize: leaf pc as is, return addresses - 1 (as Osprey does).
    wanted = collections.defaultdict(set)
    for user in stacks:
        for i, (ip, sym, dso) in enumerate(user):
            wanted[dso].add(ip if i == 0 else ip - 1)
    resolved = {dso: symbolizer.names(dso, addrs) for dso, addrs in wanted.items()}
    return out, rc, count_stacks(stacks, resolved, kernel)


def count_stacks(stacks, resolved, kernel):
    self_counts = collections.Counter()
    total_counts = collections.Counter()
    for user in stacks:
        seen = set()
        for i, (ip, sym, dso) in enumerate(user):
            if i > 0 and (dso == "[unknown]" or ip == 0):
                continue  # a junk return address from a broken chain: not a caller
            names = resolved.get(dso, {}).get(ip if i == 0 else ip - 1) or \
                [sym if sym and sym != "[unknown]" else "0x%x" % ip]
            if i == 0:
                self_counts[names[0]] += 1
            seen.update(names)
        if not user:
            self_counts["(kernel only)"] += 1
        for n in seen:
            total_counts[n] += 1
    return {"samples": len(stacks), "kernel": kernel, "self": self_counts,
            "total": total_counts}


# ---- Osprey ----

def osprey_tools(build_dir):
    return {"shim": os.path.join(build_dir, "shim", "libospreyprof.so"),
            "daemon": os.path.join(build_dir, "daemon", "ospreyd"),
            "cli": os.path.join(build_dir, "tools", "osprey")}


REPORT_HEADER = re.compile(r"^osprey: \S+ wall, ", re.M)


def osprey_profile(exe, args, workdir, tools):
    """`osprey EXE --profile -o STEM`, as a user runs it. stdout is a pipe here, so the CLI
    prints its report on stderr and stdout holds the program's own output alone."""
    stem = os.path.join(workdir, "osprey")
    out, rc, err, cpu = run([tools["cli"], exe, "--profile", "-o", stem, "--"] + args)
    warnings = [l for l in err.splitlines() if l.startswith("osprey")]
    if not REPORT_HEADER.search(err):
        warnings.append("no report on stderr")
    if not os.path.exists(stem + ".profile.json"):
        return out, rc, None, warnings + ["no profile.json written"]
    with open(stem + ".profile.json") as f:
        profile = json.load(f)
    with open(stem + ".raw.json") as f:
        raw_doc = json.load(f)
    self_counts = collections.Counter()
    total_counts = collections.Counter()
    for fn in profile["functions"]:
        self_counts[fn["name"]] += fn["self"]
        total_counts[fn["name"]] = max(total_counts[fn["name"]], fn["total"])
    others = sorted(p for p in os.listdir(workdir)
                    if p.endswith(".json") and p.startswith("osprey.raw.") and p != "osprey.raw.json")
    main_fiber = profile["fibers"][0] if profile["fibers"] else {"on_cpu": 0, "waiting": 0}
    ticks = profile["totals"]["wall_ms"] * profile["totals"]["rate_hz"] / 1000.0
    return out, rc, {"samples": profile["totals"]["on_cpu"],
                     "main_ticks": main_fiber["on_cpu"] + main_fiber["waiting"],
                     "expected_ticks": ticks,
                     "waiting": profile["totals"]["waiting"],
                     "dropped": profile["totals"].get("dropped", 0),
                     "exit": raw_doc.get("exit"), "self": self_counts, "total": total_counts,
                     "other_profiles": others}, warnings


# ---- the table ----

def pct(count, total):
    return 100.0 * count / total if total else 0.0


def noise_pp(p1, n1, p2, n2):
    """Standard error, in percentage points, of the difference of two sample proportions
    (p in percent): what two honest samplers of the same program disagree by by chance."""
    p = (p1 * n1 + p2 * n2) / (n1 + n2) / 100.0 if n1 + n2 else 0.0
    if n1 == 0 or n2 == 0:
        return 0.0
    return 100.0 * (p * (1 - p) * (1.0 / n1 + 1.0 / n2)) ** 0.5


def compare(name, runs, perf, osprey, warnings, threshold, lines):
    """Append the section for one program to lines; return 1 when something is flagged.
    runs: {"plain": (stdout, rc), "osprey": (stdout, rc)}."""
    say = lines.append
    say("### %s" % name)
    (p_out, p_rc), (o_out, o_rc) = runs["plain"], runs["osprey"]
    same = p_out == o_out and p_rc == o_rc
    say("- program under osprey: stdout %s, exit %d vs %d %s" % (
        "identical" if p_out == o_out else "DIFFERS", p_rc, o_rc,
        "" if same else "**MISMATCH**"))
    for w in warnings:
        say("- osprey said: `%s`" % w)
    if perf is None or osprey is None:
        say("- no comparison (%s missing)" % ("perf" if perf is None else "osprey"))
        return 1
    say("- samples: perf %d (kernel %.1f%%), osprey on-CPU %d, waiting %d, dropped %d%s" % (
        perf["samples"], pct(perf["kernel"], perf["samples"]), osprey["samples"],
        osprey["waiting"], osprey["dropped"],
        ", exit %s" % json.dumps(osprey["exit"]) if osprey["exit"] else ""))
    if osprey["expected_ticks"] > 0:
        say("- osprey sampler: main thread sampled on %d of %.0f ticks (%.0f%%)" % (
            osprey["main_ticks"], osprey["expected_ticks"],
            pct(osprey["main_ticks"], osprey["expected_ticks"])))
    if osprey["other_profiles"]:
        say("- other osprey profiles (descendants): %s" % ", ".join(osprey["other_profiles"]))
    names = set()
    for counts, total in ((perf["self"], perf["samples"]), (osprey["self"], osprey["samples"])):
        names.update(n for n, c in counts.most_common(8) if pct(c, total) >= 1.0)
    for counts, total in ((perf["total"], perf["samples"]), (osprey["total"], osprey["samples"])):
        names.update(n for n, c in counts.most_common(12) if 1.0 <= pct(c, total) < 99.5)
    rows = []
    for n in names:
        ps, os_ = pct(perf["self"][n], perf["samples"]), pct(osprey["self"][n], osprey["samples"])
        pt, ot = pct(perf["total"][n], perf["samples"]), pct(osprey["total"][n], osprey["samples"])
        rows.append((max(ps, os_), n, ps, os_, pt, ot))
    rows.sort(key=lambda r: (-r[0], -max(r[4], r[5]), r[1]))
    say("")
    say("| function | perf self% | osprey self% | diff | perf total% | osprey total% | diff |")
    say("|---|---:|---:|---:|---:|---:|---:|")
    flagged = 0
    n_perf, n_osprey = perf["samples"], osprey["samples"]

    def flag(a, b):
        # ⚑: beyond the threshold and beyond 3 standard errors (not sampling noise);
        # ~: beyond the threshold but within 3 standard errors.
        if abs(b - a) <= threshold:
            return ""
        return " ⚑" if abs(b - a) > 3 * noise_pp(a, n_perf, b, n_osprey) else " ~"

    for _, n, ps, os_, pt, ot in rows:
        flag_s, flag_t = flag(ps, os_), flag(pt, ot)
        flagged += "⚑" in flag_s + flag_t
        say("| %s | %.1f | %.1f | %+.1f%s | %.1f | %.1f | %+.1f%s |" % (
            n[:48], ps, os_, os_ - ps, flag_s, pt, ot, ot - pt, flag_t))
    say("")
    return int(flagged > 0 or not same)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--only", default="", help="comma-separated program names")
    parser.add_argument("--threshold", type=float, default=3.0,
                        help="flag differences beyond this many percentage points")
    parser.add_argument("--keep", help="keep raw profiles and perf data under this folder")
    parser.add_argument("--markdown", help="also write the tables to this file")
    args = parser.parse_args()

    tools = osprey_tools(os.path.abspath(args.build))
    for path in tools.values():
        if not os.path.exists(path):
            sys.exit("compare.py: %s: not built (run meson/ninja first)" % path)
    for tool in ("clang", "perf", "llvm-symbolizer"):
        if not shutil.which(tool):
            sys.exit("compare.py: %s not found on PATH" % tool)

    exes = build(os.path.join(os.path.abspath(args.build), "compare"))
    only = [n for n in args.only.split(",") if n]
    symbolizer = Symbolizer()
    scratch = args.keep or tempfile.mkdtemp(prefix="osprey-compare-")
    lines = ["Osprey vs perf — %s, `%s`" % (time.strftime("%Y-%m-%d %H:%M %Z"),
                                             " ".join(["python3"] + sys.argv)), ""]
    issues = 0
    for name, exe in exes.items():
        if only and name not in only:
            continue
        workdir = os.path.join(scratch, name)
        os.makedirs(workdir, exist_ok=True)
        for stale in os.listdir(workdir):
            os.unlink(os.path.join(workdir, stale))
        p_out, p_rc, _, _ = run([exe])
        _, _, perf = perf_profile(exe, [], workdir, symbolizer)
        o_out, o_rc, osprey, warnings = osprey_profile(exe, [], workdir, tools)
        before = len(lines)
        runs = {"plain": (p_out, p_rc), "osprey": (o_out, o_rc)}
        issues += compare(name, runs, perf, osprey, warnings, args.threshold, lines)
        print("\n".join(lines[before:]), flush=True)
    lines.append("---")
    lines.append("%d program(s) with a flagged difference (⚑: beyond %.1f pp and 3 standard "
                 "errors; ~: beyond %.1f pp, within sampling noise) or a changed run" % (
                     issues, args.threshold, args.threshold))
    print(lines[-1])
    if args.markdown:
        with open(args.markdown + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(args.markdown + ".tmp", args.markdown)
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
