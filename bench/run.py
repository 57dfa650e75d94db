#!/usr/bin/env python3
"""Osprey benchmarks, side by side with perf and gperftools in the same run.

Usage: python3 bench/run.py [--build DIR] [--reps N] [--quick] [--only SECTION,...]
                            [--tools TOOL,...] [--markdown FILE]

Sections (all by default), each a table:
  overhead   wall and CPU time of a fixed amount of work (hotspot), ratios to unprofiled,
             program and collector peak RSS
  rate       samples delivered per busy thread per second, over the rate asked for; drops
  cost       single-thread fixed work at 997 Hz and 10 kHz: program CPU (its getrusage) and
             total CPU (program + collector) beside perf, gperftools and the signal floor
             (bench/floor/sigfloor.c: one thread sending SIGPROF to an empty handler)
  idle       100 and 1000 threads that only wait: total CPU as % of one core
  fairness   8 and 64 busy threads: each thread's on-CPU sample weight over its own CPU time
  observer   perf's view of a program with and without Osprey preloaded, beside perf's own
             run-to-run difference; __libc_single_threaded under Osprey

Nothing here asserts: the numbers are printed as tables (and written to
bench/results/latest.md, or --markdown FILE). These machines are shared and noisy: every
figure is a median over repetitions, runs of the tools being compared are interleaved, and
ratios mean more than absolutes.
"""
import argparse
import collections
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

from machine import first, machine_lines
from perfscript import perf_samples

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


WORKLOADS = [("spin", "bench/workloads/spin.c"), ("hotspot", "examples/hotspot.c"),
             ("fixed", "bench/workloads/fixed.c"), ("idle", "bench/workloads/idle.c"),
             ("mutex_loop", "bench/workloads/mutex_loop.c"),
             ("single_threaded", "bench/workloads/single_threaded.c"),
             ("malloc_churn", "bench/compare/programs/malloc_churn.c"),
             ("fib", "bench/compare/programs/fib.c"),
             ("libc_heavy", "bench/compare/programs/libc_heavy.c")]


def build_workloads(build_dir):
    out = os.path.join(build_dir, "bench")
    os.makedirs(out, exist_ok=True)
    flags = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer", "-pthread"]
    progs = {}
    for name, src in WORKLOADS:
        exe = os.path.join(out, name)
        subprocess.run(["clang"] + flags + [os.path.join(ROOT, src), "-o", exe], check=True)
        progs[name] = exe
    floor = os.path.join(out, "libsigfloor.so")
    subprocess.run(["clang", "-O2", "-fPIC", "-shared", "-pthread",
                    os.path.join(ROOT, "bench/floor/sigfloor.c"), "-o", floor], check=True)
    progs["libsigfloor"] = floor
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
        """Per thread (kernel tid) on-CPU sample weights, drops, collector peak RSS (kB or
        None). A row's 5th element is its weight: the periods it stands for (absent: 1)."""
        raw = self.raw(out)
        tids = [t.get("tid", i) for i, t in enumerate(raw["threads"])]
        per_thread = {}
        for row in raw["samples"]:
            if row[3] == 0:
                tid = tids[row[1]]
                per_thread[tid] = per_thread.get(tid, 0) + (row[4] if len(row) > 4 else 1)
        collector = raw.get("collector", {}).get("peak_rss_kb")
        return per_thread, raw["dropped"], collector

    @staticmethod
    def raw(out):
        with open(out) as f:
            return json.load(f)

    def collector_cpu_s(self, out):
        """ospreyd's own CPU time for this profile (user + system), seconds."""
        return self.raw(out).get("collector", {}).get("cpu_ms", 0) / 1000.0


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


class SignalFloor:
    """Not a profiler: the least any signal-based sampler can cost. One thread sends SIGPROF to
    the main thread at the rate, to an empty handler (bench/floor/sigfloor.c)."""
    name = "signal floor"

    def __init__(self, lib):
        self.lib = lib

    def command(self, argv, hz, out):
        return argv, dict(LD_PRELOAD=self.lib, SIGFLOOR_HZ=str(hz), SIGFLOOR_COUNT=out)

    def samples(self, out):
        """Signals its handler took (it takes no samples): one total."""
        with open(out) as f:
            return {"all": int(f.read())}, 0, None


class TimerFloor(SignalFloor):
    """The floor for a sampler whose threads sample themselves: the main thread's own periodic
    timer interrupts it in place, to an empty handler (bench/floor/sigfloor.c, SIGFLOOR_TIMER)."""
    name = "timer floor"

    def command(self, argv, hz, out):
        argv, env = super().command(argv, hz, out)
        return argv, dict(env, SIGFLOOR_TIMER="1")


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


def section_overhead(progs, tools, reps, quick, scratch, emit):
    # --- overhead: fixed work (hotspot: 2 threads, one busy) ---
    work = [progs["hotspot"], "12000" if quick else "25000"]
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
            collector_cpu = tool.collector_cpu_s(out) if isinstance(tool, Osprey) else 0.0
            cpus.append(user + sys_ + collector_cpu)  # perf: wait4 saw perf and the program
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


def section_rate(progs, tools, seconds, scratch, emit):
    # --- rate: busy threads, samples delivered per busy thread per second of its CPU ---
    cases = [(1, 997), (1, 10000), (8, 10000), (64, 997)]
    emit(f"## Rate: `spin THREADS {seconds:g} cpu` (each thread busy), samples per busy thread "
         "per second of its own CPU time over the rate asked for")
    emit()
    emit("| threads | asked Hz | " + " | ".join(f"{t.name} ratio | {t.name} drops"
                                             for t in tools) + " |")
    emit("|---|---|" + "---|---|" * len(tools))
    for threads, hz in cases:
        cells = []
        for tool in tools:
            out = os.path.join(scratch, f"{tool.name}-rate-{threads}-{hz}.out")
            cmd, env = tool.command([progs["spin"], str(threads), str(seconds), "cpu"], hz, out)
            _, _, _, _, stdout = run(cmd, env=env)
            cpu = thread_cpu(stdout)
            per_thread, drops, _ = tool.samples(out)
            if tool.name == "gperftools":  # one total: over the busy threads' CPU together
                ratio = sum(per_thread.values()) / (hz * sum(cpu.values()))
            else:
                per_thread = {int(k): v for k, v in per_thread.items()}
                ratio = statistics.mean(per_thread.get(tid, 0) / (hz * c)
                                        for tid, c in cpu.items() if c > 0)
            cells.append(f"{ratio:.3f} | {drops}")
        emit(f"| {threads} | {hz} | " + " | ".join(cells) + " |")
    emit()
    emit("A ratio of 1.0 means every asked-for sample of on-CPU time arrived: each busy "
         "thread's samples (Osprey: the sum of its rows' weights) over the rate times the "
         "thread's own CPU time, so a shared or loaded machine does not lower it; the mean "
         "over the busy threads.")
    emit()


KERNEL = ("[kernel.kallsyms]", "[guest.kernel.kallsyms]")
SHIM_BUCKET = "[profiler's signal handler]"
SIGNAL_CODE = ("libospreyprof", "libsigfloor")


def user_leaf(frames):
    """The function a user-space sampler sees for a perf sample: its first user-space frame
    (a sample in the kernel counts for the user code that entered it). A sample taken inside
    a profiler's signal handler (any frame in the shim or the floor library, libc calls made
    from it included) or in the signal return trampoline is one bucket: it is the profiler's
    cost, not a function of the program."""
    user = [f for f in frames if f[2] not in KERNEL]
    if any(any(lib in dso for lib in SIGNAL_CODE) for _, _, dso in user):
        return SHIM_BUCKET
    for ip, sym, dso in user:
        if sym and sym != "[unknown]":
            name = sym.split("+")[0]
            return SHIM_BUCKET if name == "__restore_rt" else name
        return "[unknown in %s]" % os.path.basename(dso)
    return "(kernel only)"


def cpu_line(out):
    """`cpu_ns PROCESS MAIN` from bench/workloads/fixed.c: the program's getrusage, seconds."""
    for line in out.splitlines():
        if line.startswith("cpu_ns "):
            return int(line.split()[1]) / 1e9
    raise RuntimeError("the workload printed no cpu_ns line")


def fmt(value, digits=3):
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


def section_cost(progs, tools, reps, rounds, scratch, emit):
    """Single-thread fixed work at 997 Hz and 10 kHz: program CPU and total CPU beside perf,
    gperftools and the signal floor. Runs of every configuration are interleaved rep by rep,
    so a change in the machine's load falls on all of them alike."""
    work = [progs["fixed"], str(rounds)]
    configs = [(None, 0)] + [(tool, hz) for hz in (997, 10000) for tool in tools]
    results = collections.defaultdict(list)
    for rep in range(reps):
        for tool, hz in configs:
            key = (tool.name if tool else "unprofiled", hz)
            out = os.path.join(scratch, f"cost-{key[0].replace(' ', '_')}-{hz}-{rep}.out")
            cmd, env = tool.command(work, hz, out) if tool else (work, {})
            wall, user, sys_, _, stdout = run(cmd, env=env)
            total = user + sys_  # for perf: perf and the program (perf reaps it)
            samples = signals = None
            if tool:
                per_thread, _, _ = tool.samples(out)
                samples = signals = sum(per_thread.values())
            if isinstance(tool, Osprey):
                total += tool.collector_cpu_s(out)
                signals = len(tool.raw(out)["samples"])  # rows: at most one per signal
            elif isinstance(tool, SignalFloor):
                samples = None
            elif isinstance(tool, Perf):
                signals = None  # perf interrupts in the kernel; no signal reaches the program
            program = cpu_line(stdout)
            results[key].append(dict(wall=wall, program=program, total=total,
                                     rate=samples / program if samples is not None else None,
                                     signals=signals / program if signals is not None else None))
    med = {k: {f: median([r[f] for r in v if r[f] is not None]) if v[0][f] is not None
               else None for f in v[0]} for k, v in results.items()}
    base = med[("unprofiled", 0)]
    floor = {hz: med.get(("signal floor", hz)) for hz in (997, 10000)}
    emit(f"## Cost: `fixed {rounds}` (one thread, a fixed amount of work), median of {reps}")
    emit()
    emit("The *signal floor* is a thread sending SIGPROF to an empty handler; the *timer floor* "
         "the main thread's own periodic timer doing the same in place (bench/floor/sigfloor.c). "
         "Program CPU is the program's own getrusage at the end of main (for the signal floor "
         "it includes its sender thread); total CPU adds the collector: ospreyd's "
         "`collector.cpu_ms`, perf's own process. Added = total − unprofiled total. "
         "*Signals*: SIGPROFs the program handled per second of its CPU time (Osprey: its raw "
         "rows, at most one per signal, so a lower bound; perf sends none); *samples*: "
         "sampling periods paid per CPU-second (Osprey: the sum of on-CPU weights).")
    emit()
    emit("| tool | Hz | signals per CPU-s | samples per CPU-s | program CPU s | ×unprofiled "
         "| total CPU s | ×unprofiled | added CPU ms | added ÷ signal floor's |")
    emit("|---|---|---|---|---|---|---|---|---|---|")
    emit(f"| unprofiled | – | – | – | {base['program']:.3f} | 1.000 | {base['total']:.3f} "
         "| 1.000 | 0 | – |")
    timer = {hz: med.get(("timer floor", hz)) for hz in (997, 10000)}
    for tool, hz in configs[1:]:
        m = med[(tool.name, hz)]
        added = m["total"] - base["total"]
        fl = floor[hz]
        over_floor = added / (fl["total"] - base["total"]) if fl and fl["total"] > base[
            "total"] else None
        emit(f"| {tool.name} | {hz} | {fmt(m['signals'], 0)} | {fmt(m['rate'], 0)} "
             f"| {m['program']:.3f} "
             f"| {m['program'] / base['program']:.3f} | {m['total']:.3f} "
             f"| {m['total'] / base['total']:.3f} | {added * 1000:.0f} | {fmt(over_floor, 2)} |")
    emit()
    for hz in (997, 10000):
        o, fl, tf = med.get(("osprey", hz)), floor[hz], timer[hz]
        if o and fl:
            emit(f"- {hz} Hz: Osprey total ÷ signal floor total = "
                 f"{o['total'] / fl['total']:.3f}; Osprey's added CPU ÷ the floor's = "
                 f"{fmt((o['total'] - base['total']) / (fl['total'] - base['total']), 2)}")
        if o and tf and tf["total"] > base["total"]:
            emit(f"- {hz} Hz: Osprey's added CPU ÷ the timer floor's = "
                 f"{fmt((o['total'] - base['total']) / (tf['total'] - base['total']), 2)} "
                 f"(the timer floor handled {fmt(tf['signals'], 0)} signals per CPU-s, Osprey "
                 f"{fmt(o['signals'], 0)})")
        if o and fl and o["signals"] and fl["signals"]:
            per_o = (o["total"] - base["total"]) / (o["signals"] * o["program"])
            per_f = (fl["total"] - base["total"]) / (fl["signals"] * fl["program"])
            emit(f"- {hz} Hz: added CPU per signal handled: Osprey {per_o * 1e6:.1f} µs, signal "
                 f"floor {per_f * 1e6:.1f} µs ({fmt(per_o / per_f, 2)})")
    emit("- gperftools samples with ITIMER_PROF, which this kernel fires at most once per "
         "scheduler tick: its samples per CPU-second show the rate it really ran at.")
    emit()


def section_idle(progs, osprey, perf, reps, seconds, cases, scratch, emit):
    """Threads that only wait: what the profiler costs a pool with nothing to do."""
    rows = []
    for threads, mode in cases:
        work = [progs["idle"], str(threads), str(seconds), mode]
        got = collections.defaultdict(list)
        for rep in range(reps):
            for tool in (None, osprey, perf):
                name = tool.name if tool else "unprofiled"
                out = os.path.join(scratch, f"idle-{name}-{threads}-{mode}-{rep}.out")
                cmd, env = tool.command(work, 997, out) if tool else (work, {})
                wall, user, sys_, _, stdout = run(cmd, env=env)
                total = user + sys_
                idle_cpu, idle_wall = next(
                    (int(l.split()[1]), int(l.split()[2])) for l in stdout.splitlines()
                    if l.startswith("idle_cpu_ns "))
                extra = dict(waiting=100.0 * idle_cpu / idle_wall)
                if tool is osprey:
                    total += osprey.collector_cpu_s(out)
                    raw = osprey.raw(out)
                    extra.update(rows=len(raw["samples"]), dropped=raw["dropped"])
                got[name].append(dict(pct=100.0 * total / wall, total=total, **extra))
        med = {k: {f: median([r[f] for r in v]) for f in v[0]} for k, v in got.items()}
        rows.append((threads, mode, med))
    emit(f"## Idle threads: `idle THREADS {seconds:g} MODE` at 997 Hz, median of {reps}")
    emit()
    emit("*Whole run*: total CPU (program + collector: ospreyd's `collector.cpu_ms`, perf's "
         "own process) over wall time, as % of one core, thread start-up and exit included. "
         "*While waiting*: the program's own CPU (getrusage) from when every thread is "
         "started to the end of the wait, over that time: the steady cost of an idle pool "
         "inside the program (perf's cost there is in the kernel, charged to nobody's "
         "rusage). `cond`: every thread blocked in pthread_cond_wait; `sleep`: every thread "
         "looping on 100 ms nanosleeps. Added = profiled − unprofiled, in points of one core.")
    emit()
    emit("| threads | waiting in | unprofiled whole run % | osprey % | osprey added "
         "| perf % | perf added | while waiting: unprofiled % | osprey % | perf % "
         "| osprey rows |")
    emit("|---|---|---|---|---|---|---|---|---|---|---|")
    for threads, mode, med in rows:
        b = med["unprofiled"]
        o = med.get("osprey")
        p = med.get("perf")
        emit(f"| {threads} | {mode} | {b['pct']:.2f} | {fmt(o and o['pct'], 2)} "
             f"| {fmt(o and o['pct'] - b['pct'], 2)} "
             f"| {fmt(p and p['pct'], 2)} | {fmt(p and p['pct'] - b['pct'], 2)} "
             f"| {b['waiting']:.2f} | {fmt(o and o['waiting'], 2)} "
             f"| {fmt(p and p['waiting'], 2)} | {fmt(o and o['rows'], 0)} |")
    emit()


def thread_cpu(stdout):
    """{tid: cpu seconds} from `spin ... cpu` output."""
    cpu = {}
    for line in stdout.splitlines():
        if line.startswith("thread "):
            _, tid, ns = line.split()
            cpu[int(tid)] = int(ns) / 1e9
    return cpu


def section_fairness(progs, tools, reps, seconds, scratch, emit):
    """Busy threads, more than cores: does each thread get samples in proportion to its own
    CPU time?"""
    hz = 997
    period = 1.0 / hz
    emit(f"## Fairness: `spin THREADS {seconds:g} cpu` at {hz} Hz, {os.cpu_count()} cores, "
         f"median of {reps}")
    emit()
    emit("Per busy thread: its on-CPU samples (Osprey: the sum of its rows' weights) times the "
         "period, over its own CPU time (its CPU clock as it ends). *vs own CPU* isolates the "
         "sampler; *vs equal share* divides the workers' total CPU equally (what the "
         "±20% target reads), so it also holds the scheduler's own unevenness, shown last as "
         "thread CPU ÷ mean. Each cell: min / max over the threads (median over runs).")
    emit()
    emit("| threads | tool | all threads: samples × period ÷ CPU | vs own CPU min / max "
         "| vs equal share min / max | scheduler: CPU ÷ mean min / max |")
    emit("|---|---|---|---|---|---|")
    for threads in (8, 64):
        for tool in tools:
            stats = collections.defaultdict(list)
            for rep in range(reps):
                out = os.path.join(scratch, f"fair-{tool.name}-{threads}-{rep}.out")
                cmd, env = tool.command([progs["spin"], str(threads), str(seconds), "cpu"], hz,
                                        out)
                _, _, _, _, stdout = run(cmd, env=env)
                cpu = thread_cpu(stdout)
                per_thread, _, _ = tool.samples(out)
                per_thread = {int(k): v for k, v in per_thread.items()}
                sampled = {tid: per_thread.get(tid, 0) * period for tid in cpu}
                fair = sum(cpu.values()) / len(cpu)
                own = [sampled[t] / cpu[t] for t in cpu if cpu[t] > 0]
                equal = [sampled[t] / fair for t in cpu]
                sched = [cpu[t] / fair for t in cpu]
                stats["all"].append(sum(sampled.values()) / sum(cpu.values()))
                for name, values in (("own", own), ("equal", equal), ("sched", sched)):
                    stats[name + "_min"].append(min(values))
                    stats[name + "_max"].append(max(values))
            m = {k: median(v) for k, v in stats.items()}
            emit(f"| {threads} | {tool.name} | {m['all']:.3f} "
                 f"| {m['own_min']:.2f} / {m['own_max']:.2f} "
                 f"| {m['equal_min']:.2f} / {m['equal_max']:.2f} "
                 f"| {m['sched_min']:.2f} / {m['sched_max']:.2f} |")
    emit()


def perf_shares(exe, argv, env, hz, out):
    """perf record the program (its environment extended by env through env(1), so perf
    itself never loads the shim); return (self shares {function: % of the program's own
    samples}, with SHIM_BUCKET: % of all samples; the sample count; samples of ospreyd).
    Only samples of the program's process count: the process with the program's command name
    that has the most samples (a forked helper shares its name)."""
    prefix = ["env"] + [f"{k}={v}" for k, v in env.items()] if env else []
    run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-g", "-o", out, "--"] +
        prefix + [exe] + argv)
    comm = os.path.basename(exe)[:15]
    samples = perf_samples(out)
    per_pid = collections.Counter(pid for name, pid, _ in samples if name == comm)
    root = per_pid.most_common(1)[0][0] if per_pid else None
    counts = collections.Counter()
    daemon = 0
    for name, pid, frames in samples:
        if pid == root:
            counts[user_leaf(frames)] += 1
        elif name == "ospreyd":
            daemon += 1
    n = sum(counts.values())
    own = n - counts[SHIM_BUCKET]
    shares = {f: 100.0 * c / own for f, c in counts.items() if f != SHIM_BUCKET} if own else {}
    shares[SHIM_BUCKET] = 100.0 * counts[SHIM_BUCKET] / n if n else 0.0
    return shares, n, daemon


def share_diff(a, b, functions):
    diffs = [abs(a.get(f, 0.0) - b.get(f, 0.0)) for f in functions]
    return statistics.mean(diffs), max(diffs)


def section_observer(progs, osprey, floor, reps, hz, names, scratch, emit):
    """perf's view of a program with and without Osprey preloaded."""
    emit(f"## Observer check: `perf record -e cpu-clock -F {hz} -g` on a program, with and "
         f"without Osprey at {hz} Hz preloaded, {reps} runs each")
    emit()
    emit("Self shares of the program's top functions (top 10 of the runs without Osprey, by "
         "mean share), as perf sees them: a kernel sample counts for its first user-space "
         "frame; shares are of the program's own samples, those inside a profiler's signal "
         "handler (its library's frames, the libc calls it makes, the signal return "
         "trampoline) set apart as *handler %* (of all samples), since their cost is the "
         "cost table's business. *perf vs perf*: the difference between two runs without "
         "Osprey (every pair); "
         "*with vs without*: between a run with Osprey and one without (every pair); "
         "*floor vs without*: the same with the signal floor preloaded instead (SIGPROF at "
         "the same rate to an empty handler, sent from a forked process so that the program "
         "stays single-threaded): what any signal-based sampler does. Each: "
         "mean / max absolute difference over those functions, in percentage points (median "
         "over pairs). ospreyd's samples (its own process) are shown per 1000 of the "
         "program's samples.")
    emit()
    emit("| program | samples | perf vs perf: mean / max pp | with vs without: mean / max pp "
         "| floor vs without: mean / max pp | handler % osprey / floor "
         "| ospreyd samples per 1000 "
         "| largest move (without → with) |")
    emit("|---|---|---|---|---|---|---|---|")
    env = dict(OSPREY_PROFILE_HZ=str(hz), LD_PRELOAD=osprey.lib, OSPREY_DAEMON=osprey.daemon)
    for name in names:
        plain, profiled, floored = [], [], []
        for rep in range(reps):
            floored.append(perf_shares(
                progs[name], [], dict(LD_PRELOAD=floor.lib, SIGFLOOR_HZ=str(hz),
                                      SIGFLOOR_PROCESS="1"), hz,
                os.path.join(scratch, f"obs-{name}-floor-{rep}.data")))
            plain.append(perf_shares(progs[name], [], None, hz,
                                     os.path.join(scratch, f"obs-{name}-plain-{rep}.data")))
            raw = os.path.join(scratch, f"obs-{name}-osprey-{rep}.json")
            profiled.append(perf_shares(progs[name], [], dict(env, OSPREY_PROFILE=raw), hz,
                                        os.path.join(scratch, f"obs-{name}-osprey-{rep}.data")))
        mean_plain = collections.Counter()
        for shares, _, _ in plain:
            for f, v in shares.items():
                mean_plain[f] += v / reps
        top = [f for f, _ in mean_plain.most_common() if f != SHIM_BUCKET][:10]
        pp = [share_diff(plain[i][0], plain[j][0], top)
              for i in range(reps) for j in range(i + 1, reps)]
        po = [share_diff(p[0], o[0], top) for p in plain for o in profiled]
        pf = [share_diff(p[0], o[0], top) for p in plain for o in floored]
        mean_prof = collections.Counter()
        for shares, _, _ in profiled:
            for f, v in shares.items():
                mean_prof[f] += v / reps
        move = max(top, key=lambda f: abs(mean_prof[f] - mean_plain[f]))
        handler = median([o[0].get(SHIM_BUCKET, 0.0) for o in profiled])
        floor_handler = median([o[0].get(SHIM_BUCKET, 0.0) for o in floored])
        daemon = median([1000.0 * o[2] / o[1] for o in profiled if o[1]])
        samples = median([p[1] for p in plain])
        emit(f"| {name} | {samples:.0f} | {median([d[0] for d in pp]):.2f} / "
             f"{median([d[1] for d in pp]):.2f} | {median([d[0] for d in po]):.2f} / "
             f"{median([d[1] for d in po]):.2f} | {median([d[0] for d in pf]):.2f} / "
             f"{median([d[1] for d in pf]):.2f} | {handler:.2f} / {floor_handler:.2f} "
             f"| {daemon:.1f} "
             f"| `{move}` {mean_plain[move]:.1f} → {mean_prof[move]:.1f} |")
    emit()
    lines = []
    for label, env_run in (("unprofiled", None), ("osprey 997 Hz", dict(OSPREY_PROFILE_HZ="997")),
                           ("osprey 10 kHz", dict(OSPREY_PROFILE_HZ="10000"))):
        e = {}
        if env_run:
            e = dict(env_run, LD_PRELOAD=osprey.lib, OSPREY_DAEMON=osprey.daemon,
                     OSPREY_PROFILE=os.path.join(scratch, "single-threaded.json"))
        out = run([progs["single_threaded"]], env=e)[4].strip()
        lines.append(f"{label}: `{out}`")
    emit("`__libc_single_threaded` in a program that never starts a thread "
         "(bench/workloads/single_threaded.c: at main's start, after 200 ms of work, after a "
         "100 ms sleep): " + "; ".join(lines) + ".")
    emit()


def machine_header(argv):
    """Date, machine, versions and the exact command, for the top of a results file."""
    commit = first(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    return machine_lines(" (the machine is shared with other work: every figure is a median)") + [
            f"- tree: {commit}; {first(['perf', '--version'])}; "
            f"{first(['clang', '--version'])}; gperftools "
            f"{first(['dpkg-query', '-W', '-f', '${Version}', 'libgoogle-perftools4'])}",
            f"- command: `{' '.join(['python3', 'bench/run.py'] + argv)}`"]


SECTIONS = ["overhead", "rate", "cost", "idle", "fairness", "observer"]


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="shorter runs, fewer repetitions (about 3 minutes)")
    parser.add_argument("--tools", default="osprey,perf,gperftools",
                        help="comma-separated subset of osprey,perf,gperftools")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help="comma-separated subset of " + ",".join(SECTIONS))
    parser.add_argument("--markdown", help="also write the tables, with the date, machine and "
                        "command, to this file")
    args = parser.parse_args()
    reps = 3 if args.quick else args.reps
    seconds = 1.0 if args.quick else 3.0
    sections = args.only.split(",")
    for section in sections:
        if section not in SECTIONS:
            parser.error(f"--only: unknown section {section!r}")

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
    header = machine_header(sys.argv[1:])
    lines = []

    def emit(line=""):
        print(line, flush=True)
        lines.append(line)

    for line in header:
        emit(line)
    emit()
    if "overhead" in sections:
        section_overhead(progs, tools, reps, args.quick, scratch, emit)
    if "rate" in sections:
        section_rate(progs, tools, seconds, scratch, emit)
    osprey = next((t for t in tools if isinstance(t, Osprey)), None)
    perf = next((t for t in tools if isinstance(t, Perf)), None)
    if "cost" in sections:
        cost_tools = (tools[:1] + [SignalFloor(progs["libsigfloor"]), TimerFloor(progs["libsigfloor"])]
                      + tools[1:])
        section_cost(progs, cost_tools, 2 if args.quick else max(reps, 7),
                     40000 if args.quick else 120000, scratch, emit)
    if "idle" in sections and osprey:
        cases = [(100, "cond"), (1000, "cond")] + ([] if args.quick else [(1000, "sleep")])
        section_idle(progs, osprey, perf, 1 if args.quick else 3, 3.0 if args.quick else 6.0,
                     cases, scratch, emit)
    if "fairness" in sections:
        section_fairness(progs, [t for t in tools if not isinstance(t, Gperftools)],
                         1 if args.quick else 3, 1.5 if args.quick else 3.0, scratch, emit)
    if "observer" in sections and osprey and perf:
        names = ["malloc_churn", "mutex_loop"] + ([] if args.quick else ["fib", "libc_heavy"])
        section_observer(progs, osprey, SignalFloor(progs["libsigfloor"]),
                         2 if args.quick else 3, 4000, names, scratch, emit)
    emit(f"Run took {time.monotonic() - STARTED:.0f} s; load average at the end: "
         f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    shutil.rmtree(scratch, ignore_errors=True)

    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.join(ROOT, "bench", "results"), exist_ok=True)
    targets = [os.path.join(ROOT, "bench", "results", "latest.md")]
    if args.markdown:
        targets.append(args.markdown)
    for target in targets:
        tmp = target + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, target)


STARTED = time.monotonic()

if __name__ == "__main__":
    sys.exit(main())
