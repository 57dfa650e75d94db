#!/usr/bin/env python3
"""bench/unwind/clang_cold.py BUILD [--reps N] [--perf] — clang-14 compiling a generated C
file (gen_c.py, `clang-14 -O2 -c`: the compiler runs in one process) under Osprey with an
empty unwind cache each run, the rows built by libdw's builder (OSPREYD_UNWIND_BUILDER=libdw)
and by the CFI-to-rows translator (daemon/cfi-rows.c), alternated; with --perf, perf record
--call-graph dwarf once beside them. Per run: the share of on-CPU samples whose stack reaches
the root (unwind.py's rule), the time of the first whole sample and of the last cut one, when
every object's rows were published (collector.unwind.ready_ns), ospreyd's CPU. --warm: each
translator run once more with its cache kept; --cut: where the cut stacks end, before and after
the rows were ready."""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import unwind  # noqa: E402


def analyse(raw_path):
    raw = json.load(open(raw_path))
    sym = unwind.Symbolizer(raw)
    rows = []  # (t_rel_ns, weight, stack) of on-CPU samples
    for row in raw["samples"]:
        if row[3] != 0:
            continue
        rows.append((row[0], unwind.weight(row), raw["stacks"][row[2]]))

    def outer_pcs(stack):
        n = len(stack)
        return [stack[i] - (1 if i else 0) for i in range(n - 1, max(n - 3, -1), -1)]
    named = sym.names({pc for _, _, s in rows for pc in outer_pcs(s)})
    total = rooted = 0
    first_whole = last_cut = None
    ready = raw.get("collector", {}).get("unwind", {}).get("ready_ns", 0)
    cut = collections.Counter()
    for t, w, stack in sorted(rows):
        total += w
        whole = unwind.reaches_root([named.get(pc, ("?", None))[1] for pc in outer_pcs(stack)])
        if whole:
            rooted += w
            first_whole = t if first_whole is None else first_whole
        else:
            last_cut = t
            image, name = named.get(outer_pcs(stack)[0], ("?", None)) if stack else ("?", None)
            cut[("before" if t < ready else "after", os.path.basename(image), name,
                 len(stack))] += w
    collector = raw.get("collector", {})
    unwind_info = collector.get("unwind", {})
    return dict(samples=total, rooted=rooted / total if total else 0,
                first_whole_ms=(first_whole or 0) / 1e6, last_cut_ms=(last_cut or 0) / 1e6,
                ready_ms=unwind_info.get("ready_ns", 0) / 1e6, cpu_ms=collector.get("cpu_ms", 0),
                rows=unwind_info.get("rows", 0), bytes=unwind_info.get("bytes", 0),
                images=unwind_info.get("images", 0), cached=unwind_info.get("cached", 0),
                cut=cut)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--perf", action="store_true")
    parser.add_argument("--warm", action="store_true")
    parser.add_argument("--cut", action="store_true")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    clang = shutil.which("clang-14") or shutil.which("clang")
    if clang is None:
        sys.exit("clang_cold: no clang-14 here")
    shim = os.path.join(build, "shim", "libospreyprof.so")
    daemon = os.path.join(build, "daemon", "ospreyd")
    scratch = tempfile.mkdtemp(prefix="osprey-clang-cold.")
    source = os.path.join(scratch, "generated.c")
    subprocess.run([sys.executable, os.path.join(unwind.WORK, "gen_c.py"), source], check=True)
    argv = [clang, "-O2", "-c", source, "-o", os.path.join(scratch, "generated.o")]
    print(f"clang_cold: {' '.join(argv)} ({sum(1 for _ in open(source))} lines), "
          f"{unwind.HZ} Hz, {os.getloadavg()[0]:.1f} load")
    print("| builder | run | samples | to root | first whole ms | last cut ms | rows ready ms "
          "| ospreyd CPU ms | images | rows | table bytes |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for rep in range(args.reps):
        runs = [("libdw", True), ("translator", True)] + ([("translator", False)]
                                                          if args.warm else [])
        for builder, cold in runs:
            if cold:
                cache = tempfile.mkdtemp(prefix="cache.", dir=scratch)  # empty: a first run
            raw = os.path.join(scratch, f"{builder}-{rep}-{cold}.raw.json")
            env = dict(LD_PRELOAD=shim, OSPREY_DAEMON=daemon, OSPREY_PROFILE=raw,
                       OSPREY_PROFILE_HZ=str(unwind.HZ), XDG_CACHE_HOME=cache)
            if builder == "libdw":
                env["OSPREYD_UNWIND_BUILDER"] = "libdw"
            unwind.run_cmd(argv, env=env, cwd=scratch)
            a = analyse(raw)
            print(f"| {builder}{'' if cold else ' (warm)'} | {rep + 1} | {a['samples']} | {100 * a['rooted']:.1f}% | "
                  f"{a['first_whole_ms']:.0f} | {a['last_cut_ms']:.0f} | {a['ready_ms']:.0f} | "
                  f"{a['cpu_ms']} | {a['images']} ({a['cached']} cached) | {a['rows']} | "
                  f"{a['bytes']} |", flush=True)
            if args.cut:
                for (when, image, name, depth), w in a["cut"].most_common(5):
                    print(f"|  | cut {when} ready: {w} | {image} {name or '(no name)'}, "
                          f"{depth} frames | | | | | | | | |")
    if args.perf:
        data = os.path.join(scratch, "perf.data")
        unwind.run_cmd(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(unwind.HZ),
                        "--call-graph", f"dwarf,{unwind.DWARF_STACK}", "-o", data, "--"] + argv,
                       cwd=scratch)
        p = unwind.analyse_perf(data)
        print(f"| perf --call-graph dwarf,{unwind.DWARF_STACK} | 1 | {p['samples']} | "
              f"{100 * p['rooted']:.1f}% | | | | perf script {p['post_cpu']:.1f} s CPU | | | |")
    shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
