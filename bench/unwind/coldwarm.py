#!/usr/bin/env python3
"""bench/unwind/coldwarm.py BUILD [--only CASES] [--keep DIR] [--markdown FILE] — whole stacks
from the first sample: each case run once under Osprey with an empty unwind cache (cold: an
XDG_CACHE_HOME of the run's own, made empty), once more with that cache kept (warm), and once
under `perf record -e cpu-clock -F 997 --call-graph dwarf,16384`. The cases: clang-14 compiling
gen_c.py's file (`clang-14 -O2 -c`), g++ on a generated template-heavy file (`g++ -O2
-std=c++17 -c`, the driver and cc1plus), `make -j2` of a generated C project of 17 files
(make_project: make, sh, gcc, cc1, as, collect2, ld), and bench/unwind's six programs
(python3.11, sqlite3, perl, lua5.4, cc1, redis-server; unwind.py's workloads).

Per run: the share of on-CPU periods whose stack reaches the root (the walk's own word,
`stack_ends`, where the raw file has it; else unwind.py's names rule; perf: unwind.py's names
rule on `perf script`'s user frames, every process of the run), how the cut ones ended
(stack_ends: no row, a failed check, the depth cap, guessed), the time of the first whole
sample and of the last cut one (on the process's own axis; for several processes the first
whole sample of each, its median and largest), when the rows were ready
(`collector.unwind.ready_ns`, the largest over the processes), ospreyd's CPU, and the
`stacks:` line of `osprey report` (which objects and processes the cut stacks are in)."""
import argparse
import collections
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import unwind  # noqa: E402  (unwind.py: the programs, the names rule, perf script)
from unwind import HZ, DWARF_STACK, run_cmd  # noqa: E402
from checks import on_cpu, stack_whole, weight  # noqa: E402  (tests/checks.py)
from machine import machine_lines  # noqa: E402  (bench/machine.py)

# stack_ends (proto/raw-format.md): why a walk ended.
ENDS = {0: "not said", 1: "outermost", 2: "no row", 3: "failed check", 4: "depth cap",
        5: "guessed"}
MAKE_FILES = 17


def make_project(directory, files=MAKE_FILES, functions=4):
    """A small C project for `make -j2`: FILES sources of gen_c.py's code (FUNCTIONS functions
    each, their entry points renamed per file), a main calling them, a Makefile that compiles
    each with `gcc -O2 -c` and links them (every file defines the same names:
    the link allows it)."""
    os.makedirs(directory, exist_ok=True)
    objects = []
    for i in range(files):
        path = os.path.join(directory, f"part{i}.c")
        subprocess.run([sys.executable, os.path.join(unwind.WORK, "gen_c.py"), path,
                        str(functions)], check=True)
        objects.append(f"part{i}.o")
    with open(os.path.join(directory, "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    objects.append("main.o")
    with open(os.path.join(directory, "Makefile"), "w") as f:
        f.write("CC = gcc\nCFLAGS = -O2\n"
                f"prog: {' '.join(objects)}\n\t$(CC) -Wl,--allow-multiple-definition -o $@ $^\n"
                "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
                "clean:\n\trm -f *.o prog\n")
    return directory


TEMPLATES = r"""
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

template <int N> struct fib { static constexpr long value = fib<N - 1>::value + fib<N - 2>::value; };
template <> struct fib<1> { static constexpr long value = 1; };
template <> struct fib<0> { static constexpr long value = 0; };

template <typename T, std::size_t... I>
auto sum_tuple(const T &t, std::index_sequence<I...>) { return (std::get<I>(t) + ...); }

template <typename... Ts> struct overloaded : Ts... { using Ts::operator()...; };
template <typename... Ts> overloaded(Ts...) -> overloaded<Ts...>;
"""


def template_unit(i):
    return f"""
namespace n{i} {{
template <typename K, typename V>
struct store {{
    std::map<K, std::vector<V>> by_key;
    std::unordered_map<std::string, std::function<V(const V &)>> ops;
    void add(const K &k, V v) {{ by_key[k].push_back(std::move(v)); }}
    template <typename F> V fold(F f) const {{
        V acc{{}};
        for (const auto &[k, vs] : by_key)
            acc = std::accumulate(vs.begin(), vs.end(), acc, f);
        return acc;
    }}
}};
using var{i} = std::variant<int, long, double, std::string, std::vector<int>>;
long run(int n) {{
    store<std::string, long> s;
    store<int, double> d;
    std::vector<var{i}> vs;
    for (int k = 0; k < n; k++) {{
        s.add(std::to_string(k % 7), k * {i + 1}L);
        d.add(k % 5, k * 0.5);
        vs.emplace_back(k % 3 ? var{i}(k) : var{i}(std::to_string(k)));
    }}
    std::sort(vs.begin(), vs.end(), [](const var{i} &a, const var{i} &b) {{ return a.index() < b.index(); }});
    long total = 0;
    for (auto &v : vs)
        total += std::visit(overloaded{{[](int x) {{ return (long)x; }}, [](long x) {{ return x; }},
                                        [](double x) {{ return (long)x; }},
                                        [](const std::string &x) {{ return (long)x.size(); }},
                                        [](const std::vector<int> &x) {{ return (long)x.size(); }}}}, v);
    auto t = std::make_tuple({i}, {i}L, {i}.0, (short){i}, 1u, 2ul, 3ll);
    total += (long)sum_tuple(t, std::make_index_sequence<std::tuple_size_v<decltype(t)>>{{}});
    total += fib<{20 + i % 40}>::value % 1000;
    total += s.fold([](long a, long b) {{ return a + b; }}) + (long)d.fold(std::plus<double>{{}});
    std::map<std::string, std::map<int, std::vector<std::pair<std::string, double>>>> deep;
    deep[std::to_string(n)][n].emplace_back("x", 1.0);
    return total + (long)deep.size();
}}
}}
"""


def write_templates(path, units=40):
    with open(path, "w") as f:
        f.write(TEMPLATES)
        for i in range(units):
            f.write(template_unit(i))
        f.write("long run_all(int n) { long t = 0;\n")
        for i in range(units):
            f.write(f"    t += n{i}::run(n);\n")
        f.write("    return t; }\n")


class Case:
    def __init__(self, name, argv, note, cwd, prepare=None, client=None):
        self.name, self.argv, self.note, self.cwd = name, argv, note, cwd
        self.prepare, self.client = prepare, client


def cases(scratch, only):
    out = []
    if not only or "clang" in only:
        clang = shutil.which("clang-14") or shutil.which("clang")
        if clang:
            src = os.path.join(scratch, "clang.c")
            subprocess.run([sys.executable, os.path.join(unwind.WORK, "gen_c.py"), src],
                           check=True)
            lines = sum(1 for _ in open(src))
            out.append(Case("clang", [clang, "-O2", "-c", src, "-o",
                                      os.path.join(scratch, "clang.o")],
                            f"clang-14 -O2 -c, gen_c.py's {lines}-line file", scratch))
    if not only or "g++" in only:
        src = os.path.join(scratch, "templates.cc")
        write_templates(src)
        lines = sum(1 for _ in open(src))
        out.append(Case("g++", ["g++", "-O2", "-std=c++17", "-c", src, "-o",
                                os.path.join(scratch, "templates.o")],
                        f"g++ -O2 -std=c++17 -c, a {lines}-line template-heavy file "
                        "(maps, variants, std::visit, folds)", scratch))
    if not only or "make" in only:
        project = make_project(os.path.join(scratch, "project"))
        out.append(Case("make -j2", ["make", "-s", "-j2", "-C", project],
                        f"make -j2 of {MAKE_FILES} gen_c.py files (4 functions each) and a "
                        "main, gcc -O2, linked", scratch,
                        prepare=lambda: subprocess.run(["make", "-s", "-C", project, "clean"],
                                                       check=True)))
    six = {"python3.11", "sqlite3", "perl", "lua5.4", "cc1", "redis-server"}
    wanted = six if not only else six & only
    if wanted:
        progs, missing = unwind.programs(scratch, wanted)
        for name in missing:
            print(f"coldwarm: {name} is not on this machine: left out", file=sys.stderr)
        for p in progs:
            out.append(Case(p.name, p.argv, p.note, scratch, p.prepare, p.client))
    return out


def raw_files(stem):
    return sorted(set(glob.glob(stem + ".raw.json") + glob.glob(stem + ".raw.*.json")))


def analyse_osprey(stem):
    """Every process's raw file of one run: on-CPU periods, the whole ones, how the others
    ended, first whole / last cut sample per process, rows ready, ospreyd CPU."""
    total = whole_w = 0
    ends = collections.Counter()
    per_process = []
    cpu_ms = ready_max = 0
    for path in raw_files(stem):
        raw = json.load(open(path))
        ends_list = raw.get("stack_ends") or []
        rows = [r for r in raw["samples"] if on_cpu(r)]
        said = {r[2]: stack_whole(raw, r[2]) for r in rows}
        unsaid = [i for i, v in said.items() if v is None]
        if unsaid:  # an older file or a stack the walk said nothing of: the names rule
            sym = unwind.Symbolizer(raw)

            def outer(stack):
                n = len(stack)
                return [stack[i] - (1 if i else 0) for i in range(n - 1, max(n - 3, -1), -1)]
            named = sym.names({pc for i in unsaid for pc in outer(raw["stacks"][i])})
            for i in unsaid:
                said[i] = unwind.reaches_root([named.get(pc, ("?", None))[1]
                                               for pc in outer(raw["stacks"][i])])
        p_total = p_whole = 0
        first_whole = last_cut = None
        for r in sorted(rows):
            w = weight(r)
            p_total += w
            if said[r[2]]:
                p_whole += w
                first_whole = r[0] if first_whole is None else first_whole
            else:
                last_cut = r[0]
                end = ends_list[r[2]] if r[2] < len(ends_list) else 0
                ends[ENDS.get(end, str(end))] += w
        collector = raw.get("collector", {})
        ready = collector.get("unwind", {}).get("ready_ns", 0)
        cpu_ms += collector.get("cpu_ms", 0)
        ready_max = max(ready_max, ready)
        total += p_total
        whole_w += p_whole
        if p_total:
            per_process.append(dict(exe=os.path.basename(raw.get("exe", "?")), total=p_total,
                                    whole=p_whole, first_whole=first_whole, last_cut=last_cut,
                                    ready=ready))
    return dict(files=len(raw_files(stem)), samples=total,
                rooted=whole_w / total if total else 0, ends=ends, processes=per_process,
                cpu_ms=cpu_ms, ready_ms=ready_max / 1e6)


def analyse_perf(data):
    """perf script of DATA, every process: (periods with user frames, share reaching the root
    by unwind.py's names rule, processes)."""
    _, _, per_pid = unwind.perf_script(data)
    total = rooted = 0
    for samples in per_pid.values():
        for _, frames in samples:
            if not frames:
                continue
            total += 1
            if unwind.reaches_root([unwind.name_of(f[0]) for f in frames[::-1][:2]]):
                rooted += 1
    return dict(samples=total, rooted=rooted / total if total else 0, processes=len(per_pid))


def stacks_line(build, stem):
    """The `stacks:` line of `osprey report` (no terminal: whole), with its continuation."""
    _, _, out = run_cmd([os.path.join(build, "tools", "osprey"), "report",
                         stem + ".raw.json", "-o", stem + ".out"], stdout=subprocess.PIPE)
    lines, taking = [], False
    for line in out.splitlines():
        if line.startswith("stacks:"):
            taking = True
        elif taking and not line.startswith(" "):
            taking = False
        if taking:
            lines.append(line.strip())
    return " ".join(lines) or "(none: under 1% cut)"


def ms(ns):
    return "–" if ns is None else f"{ns / 1e6:.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build")
    parser.add_argument("--only", default="", help="comma-separated: clang, g++, make, "
                        "python3.11, sqlite3, perl, lua5.4, cc1, redis-server")
    parser.add_argument("--keep", help="keep the raw files and perf.data here")
    parser.add_argument("--no-perf", action="store_true")
    parser.add_argument("--markdown", help="also append the tables to this file")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    shim = os.path.join(build, "shim", "libospreyprof.so")
    daemon = os.path.join(build, "daemon", "ospreyd")
    scratch = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(
        prefix="osprey-coldwarm.")
    os.makedirs(scratch, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    lines = []

    def emit(line=""):
        print(line, flush=True)
        lines.append(line)

    for line in machine_lines():
        emit(line)
    emit(f"- command: `python3 bench/unwind/coldwarm.py {args.build}"
         f"{' --only ' + args.only if args.only else ''}`; {HZ} Hz")
    emit()
    emit("| case | O cold: samples, to root | first whole / last cut ms | rows ready ms "
         "| ospreyd CPU ms | cut: how ended | O warm: samples, to root | first whole / last "
         "cut ms | perf dwarf: samples, to root | load |")
    emit("|---|---|---|---|---|---|---|---|---|---|")
    details = []
    started = time.monotonic()
    for case in cases(scratch, only):
        print(f"# {case.name}: {' '.join(case.argv)}", file=sys.stderr, flush=True)
        cache = tempfile.mkdtemp(prefix="cache.", dir=scratch)
        os.chmod(cache, 0o700)
        res = {}
        for mode in ("cold", "warm"):
            stem = os.path.join(scratch, f"{case.name.replace(' ', '_')}.{mode}")
            for old in raw_files(stem):
                os.unlink(old)
            if case.prepare:
                case.prepare()
            run_cmd(case.argv, env=dict(LD_PRELOAD=shim, OSPREY_DAEMON=daemon,
                                        OSPREY_PROFILE=stem + ".raw.json",
                                        OSPREY_PROFILE_HZ=str(HZ), XDG_CACHE_HOME=cache),
                    cwd=case.cwd, client=case.client)
            res[mode] = analyse_osprey(stem)
            res[mode]["stacks"] = stacks_line(build, stem)
        load = os.getloadavg()[0]
        p = None
        if not args.no_perf:
            data = os.path.join(scratch, f"{case.name.replace(' ', '_')}.perf.data")
            if case.prepare:
                case.prepare()
            run_cmd(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(HZ), "--call-graph",
                     f"dwarf,{DWARF_STACK}", "-o", data, "--"] + case.argv, cwd=case.cwd,
                    client=case.client)
            p = analyse_perf(data)
            if not args.keep:
                os.unlink(data)
        c, w = res["cold"], res["warm"]

        def times(r):
            procs = [x for x in r["processes"] if x["first_whole"] is not None]
            if len(r["processes"]) == 1:
                x = r["processes"][0]
                return f"{ms(x['first_whole'])} / {ms(x['last_cut'])}"
            firsts = [x["first_whole"] for x in procs]
            if not firsts:
                return "–"
            return (f"{len(r['processes'])} processes: median {ms(statistics.median(firsts))},"
                    f" largest {ms(max(firsts))}")

        cut = ", ".join(f"{k} {100 * v / c['samples']:.1f}%" for k, v in
                        c["ends"].most_common()) if c["samples"] else "–"
        perf_cell = f"{p['samples']}, {100 * p['rooted']:.1f}%" if p else "–"
        emit(f"| {case.name} | {c['samples']}, **{100 * c['rooted']:.1f}%** | {times(c)} "
             f"| {c['ready_ms']:.0f} | {c['cpu_ms']} | {cut or 'none'} "
             f"| {w['samples']}, **{100 * w['rooted']:.1f}%** | {times(w)} | {perf_cell} "
             f"| {load:.1f} |")
        details.append((case, c, w))
    emit()
    emit("What each case ran, and `osprey report`'s `stacks:` line (cold; warm):")
    emit()
    for case, c, w in details:
        emit(f"- **{case.name}**: {case.note}. Cold: `{c['stacks']}` Warm: `{w['stacks']}`")
        if len(c["processes"]) > 1:
            by_exe = collections.defaultdict(lambda: [0, 0, 0])
            for x in c["processes"]:
                by_exe[x["exe"]][0] += 1
                by_exe[x["exe"]][1] += x["total"]
                by_exe[x["exe"]][2] += x["whole"]
            emit("  Cold, per command: " + "; ".join(
                f"{exe} ×{n}: {t} periods, {100 * wh / t:.1f}% to root"
                for exe, (n, t, wh) in sorted(by_exe.items(), key=lambda kv: -kv[1][1])))
            worst = sorted(c["processes"], key=lambda x: x["whole"] / x["total"])[:5]
            emit("  Cold, the least whole processes: " + "; ".join(
                f"{x['exe']} {x['whole']}/{x['total']} (rows ready {ms(x['ready'])} ms, "
                f"first whole {ms(x['first_whole'])} ms)" for x in worst))
    emit()
    emit(f"Run took {time.monotonic() - started:.0f} s; load average at the end: "
         f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write("\n".join(lines) + "\n")
    if not args.keep:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
