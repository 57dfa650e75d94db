"""Stacks off the thread's own, Osprey beside perf --call-graph dwarf (run.sh): from Osprey's
folded file or perf's data, the share of a coroutine's samples that reach its entry and the
3:1 split, or a Go program's samples reaching a Go root, main.run's share and the 5:3:2 split.
Usage: shares.py coro|go FOLDED|PERF_DATA"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from perfscript import perf_samples  # noqa: E402


def stacks(path):
    """[(frames root first, count)]"""
    if path.endswith(".folded"):
        out = []
        for line in open(path):
            stack, _, count = line.rstrip("\n").rpartition(" ")
            out.append((stack.split(";")[1:], int(count)))
        return out
    # perf: user frames only (a kernel sample's chain starts with its kernel frames)
    return [([sym for _, sym, dso in reversed(chain) if not dso.startswith("[kernel")], 1)
            for _, _, chain in perf_samples(path)]


def share(st, leaf, having):
    n = k = 0
    for frames, count in st:
        if frames and re.fullmatch(leaf, frames[-1]):
            n += count
            k += count * any(re.fullmatch(having, f) for f in frames)
    return (k / n if n else 0.0), n


kind, path = sys.argv[1], sys.argv[2]
st = stacks(path)
if kind == "coro":
    whole, n = share(st, "burn", "coro_(heavy|light)")
    heavy, _ = share(st, "burn", "coro_heavy")
    print(f"{n} burn samples, {100 * whole:.1f}% reach coro_heavy/coro_light, "
          f"coro_heavy {100 * heavy / whole if whole else 0:.1f}% of them (truth 75)")
else:
    rooted, n = share(st, ".*", r"runtime\.(goexit|main|mstart)(\.abi0)?")
    run, m = share(st, r"main\.spin", r"main\.run")
    split = [share(st, r"main\.spin", rf"main\.{f}")[0] for f in ("hotA", "hotB", "hotC")]
    print(f"{n} samples, {100 * rooted:.1f}% reach a Go root; main.run {100 * run:.1f}% of "
          f"{m} main.spin samples (truth 100); hotA/hotB/hotC "
          f"{'/'.join(f'{100 * s:.1f}' for s in split)} (truth 50/30/20)")
