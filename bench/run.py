#!/usr/bin/env python3
"""Osprey benchmarks, side by side with perf and gperftools in the same run.

Usage: python3 bench/run.py [--build DIR] [--reps N] [--quick]

Measures, for each profiler on the same workloads:
  overhead   wall and CPU time of a fixed amount of work, as a ratio to the unprofiled run
  rate       samples delivered per busy thread per second, as a ratio to the rate asked for
  drops      samples the profiler reports it lost
  memory     peak RSS of the profiled program and of the collector process

Nothing here asserts: the numbers are printed as a table (and written to
bench/results/latest.md). These machines are shared and noisy; read ratios, not absolutes.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPERF_LIB = "/usr/lib/x86_64-linux-gnu/libprofiler.so.0"


def run(cmd, env=None):
    """Run cmd with the variables in env added; return (wall_s, user_s, sys_s, maxrss_kb,
    stdout). Times and peak RSS come from wait4() on the direct child, so no wrapper process
    stands between the profiler and the workload (a preloaded profiler would profile it)."""
    with tempfile.TemporaryFile("w+") as errors:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, env=dict(os.environ, **(env or {})),
                                stdout=subprocess.PIPE, stderr=errors, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        errors.seek(0)
        err = errors.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-500:]}")
    return wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, out


def build_workloads(build_dir):
    out = os.path.join(build_dir, "bench")
    os.makedirs(out, exist_ok=True)
    flags = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-pthread"]
    progs = {}
    for name, src in [("spin", "bench/workloads/spin.c"), ("hotspot", "examples/hotspot.c")]:
        exe = os.path.join(out, name)
        subprocess.run(["clang"] + flags + [os.path.join(ROOT, src), "-o", exe], check=True)
        progs[name] = exe
    return progs


class Osprey:
    name = "osprey"

    def __init__(self, build_dir):
        self.lib = os.path.join(build_dir, "shim", "libospreyprof.so")
        self.daemon = os.path.join(build_dir, "daemon", "ospreyd")

    def command(self, argv, hz, out):
        env = dict(OSPREY_PROFILE=out, OSPREY_PROFILE_HZ=str(hz), LD_PRELOAD=self.lib,
                   OSPREY_DAEMON=self.daemon)
        return argv, env

    def samples(self, out):
        """Per thread on-CPU sample counts, drops, collector peak RSS (kB or None)."""
        with open(out) as f:
            raw = json.load(f)
        per_thread = {}
        for _, thread, _, state in raw["samples"]:
            if state == 0:
                per_thread[thread] = per_thread.get(thread, 0) + 1
        collector = raw.get("collector", {}).get("peak_rss_kb")
        return per_thread, raw["dropped"], collector


class Perf:
    name = "perf"

    def command(self, argv, hz, out):
        return ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-g", "-o", out,
                "--"] + argv, {}

    def samples(self, out):
        script = subprocess.run(["perf", "script", "-i", out, "-F", "tid"], capture_output=True,
                                text=True, check=True).stdout.split()
        per_thread = {}
        for tid in script:
            per_thread[tid] = per_thread.get(tid, 0) + 1
        report = subprocess.run(["perf", "report", "-i", out, "--stats"], capture_output=True,
                                text=True).stdout
        lost = 0
        for line in report.splitlines():
            if "LOST_SAMPLES" in line or line.strip().startswith("LOST events"):
                digits = [w for w in line.split() if w.isdigit()]
                lost += int(digits[-1]) if digits else 0
        return per_thread, lost, None  # perf's memory is measured as its own process RSS


class Gperftools:
    name = "gperftools"

    def command(self, argv, hz, out):
        env = dict(LD_PRELOAD=GPERF_LIB, CPUPROFILE=out, CPUPROFILE_FREQUENCY=str(hz))
        return argv, env

    def samples(self, out):
        """The legacy CPU profile: header words, then (count, depth, pcs...) records.
        gperftools does not say which thread a sample came from: one total."""
        with open(out, "rb") as f:
            data = f.read()
        words = struct.unpack(f"<{len(data) // 8}Q", data[: len(data) // 8 * 8])
        hdr_words = words[1]
        i = 2 + hdr_words
        total = 0
        while i + 1 < len(words):
            count, depth = words[i], words[i + 1]
            if count == 0 and depth == 1:
                break
            total += count
            i += 2 + depth
        return {"all": total}, 0, None


def median(values):
    return statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="shorter runs, 3 repetitions")
    parser.add_argument("--tools", default="osprey,perf,gperftools",
                        help="comma-separated subset of osprey,perf,gperftools")
    args = parser.parse_args()
    reps = 3 if args.quick else args.reps
    seconds = 1.0 if args.quick else 3.0

    progs = build_workloads(args.build)
    wanted = args.tools.split(",")
    tools = []
    if "osprey" in wanted:
        tools.append(Osprey(args.build))
    if "perf" in wanted and shutil.which("perf"):
        tools.append(Perf())
    if "gperftools" in wanted and os.path.exists(GPERF_LIB):
        tools.append(Gperftools())
    scratch = tempfile.mkdtemp(prefix="osprey-bench-")
    lines = []

    def emit(line=""):
        print(line, flush=True)
        lines.append(line)

    # --- overhead: fixed work (hotspot: 2 threads, one busy) ---
    work = [progs["hotspot"], "12000" if args.quick else "25000"]
    base = [run(work) for _ in range(reps)]
    base_wall = median([b[0] for b in base])
    base_cpu = median([b[1] + b[2] for b in base])
    base_rss = median([b[3] for b in base])
    emit(f"## Overhead at 997 Hz: `{' '.join(os.path.basename(w) for w in work)}`, "
         f"median of {reps}")
    emit()
    emit(f"unprofiled: wall {base_wall:.3f} s, CPU {base_cpu:.3f} s, max RSS {base_rss} kB")
    emit()
    emit("| tool | wall ratio | CPU ratio (program + collector) | program max RSS ratio "
         "| collector max RSS |")
    emit("|---|---|---|---|---|")
    for tool in tools:
        walls, cpus, rsss, collectors = [], [], [], []
        for rep in range(reps):
            out = os.path.join(scratch, f"{tool.name}-overhead-{rep}.out")
            cmd, env = tool.command(work, 997, out)
            wall, user, sys_, rss, _ = run(cmd, env=env)
            walls.append(wall)
            cpus.append(user + sys_)
            _, _, collector = tool.samples(out)
            if tool.name == "perf":
                collector, rss = rss, None  # wait4 measured perf itself, the program's parent
            rsss.append(rss)
            collectors.append(collector)
        program_rss = [r for r in rsss if r]
        rss_ratio = f"{median(program_rss) / base_rss:.2f}" if program_rss else "n/a"
        known = [c for c in collectors if c]
        coll = f"{median(known) / 1024:.1f} MiB" if known else "in-process"
        emit(f"| {tool.name} | {median(walls) / base_wall:.3f} | {median(cpus) / base_cpu:.3f} "
             f"| {rss_ratio} | {coll} |")
    emit()

    # --- rate: busy threads, samples delivered per thread per second ---
    cases = [(1, 997), (1, 10000), (8, 10000), (64, 997)]
    emit(f"## Rate: `spin THREADS {seconds:g}` (each thread busy), samples per busy thread "
         "per second over the rate asked for")
    emit()
    emit("| threads | asked Hz | " + " | ".join(f"{t.name} ratio | {t.name} drops"
                                             for t in tools) + " |")
    emit("|---|---|" + "---|---|" * len(tools))
    for threads, hz in cases:
        cells = []
        for tool in tools:
            out = os.path.join(scratch, f"{tool.name}-rate-{threads}-{hz}.out")
            cmd, env = tool.command([progs["spin"], str(threads), str(seconds)], hz, out)
            run(cmd, env=env)
            per_thread, drops, _ = tool.samples(out)
            counts = sorted(per_thread.values(), reverse=True)
            if tool.name == "gperftools":
                achieved = counts[0] / threads if counts else 0
            else:
                # the busy threads are the `threads` busiest entries (main only waits)
                achieved = statistics.mean(counts[:threads]) if counts else 0
            # On 2 cores a thread is on-CPU at most cores/threads of the time.
            cpu_share = min(1.0, os.cpu_count() / threads)
            ratio = achieved / (hz * seconds * cpu_share)
            cells.append(f"{ratio:.3f} | {drops}")
        emit(f"| {threads} | {hz} | " + " | ".join(cells) + " |")
    emit()
    emit("A ratio of 1.0 means every asked-for sample of on-CPU time arrived. With more busy "
         "threads than cores each thread is on-CPU only cores/threads of the time; the "
         "expected count is scaled by that share.")
    shutil.rmtree(scratch, ignore_errors=True)

    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench", "results", "latest.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
