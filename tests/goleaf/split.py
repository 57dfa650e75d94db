"""The shares tests/goleaf/goleaf.go is built to show, from Osprey's folded stacks or from
`perf script` (perf record --call-graph dwarf), for tests/e2e-goleaf.sh and bench/goleaf/run.sh.

leaves   on-CPU samples whose leaf is main.hotA, main.hotB or main.hotC
reach    of those, the share whose stack holds main.spin and runtime.goexit (.abi0 in perf)
rooted   of those, the share whose stack reaches runtime.goexit, main.spin or not
caller   main.spin's inclusive share of the program's on-CPU samples, and its truth: the
         share whose leaf is one of the three or main.spin itself (every call of them is
         spin's; the leaf is right however the walk went on)
split    hotA:hotB:hotC under main.spin, against the leaves' own split (the truth the walk
         must keep) and the built 3:2:1 (50.0/33.3/16.7)
Usage: python3 split.py folded FILE.folded | perf PERF.DATA   (prints key value lines)
"""
import os
import sys

LEAVES = ("main.hotA", "main.hotB", "main.hotC")


def from_folded(path):
    """[(frames root first, count)] of an Osprey folded file, the thread's frame left out."""
    rows = []
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")[1:]
            rows.append(([fr.split(" ")[0] for fr in frames], int(count)))
    return rows


def from_perf(data):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "bench"))
    from perfscript import perf_samples
    rows = []
    for comm, _, frames in perf_samples(data):
        if not comm.startswith("goleaf"):
            continue
        names = [sym.split("+")[0] for _, sym, _ in reversed(frames)]
        rows.append((names, 1))
    return rows


def shares(rows):
    total = sum(c for _, c in rows)
    leaf_rows = [(fr, c) for fr, c in rows if fr and fr[-1] in LEAVES]
    leaves = sum(c for _, c in leaf_rows)
    reach = sum(c for fr, c in leaf_rows
                if "main.spin" in fr and any(f.startswith("runtime.goexit") for f in fr))
    rooted = sum(c for fr, c in leaf_rows if any(f.startswith("runtime.goexit") for f in fr))
    spin = sum(c for fr, c in rows if "main.spin" in fr)
    truth = sum(c for fr, c in rows if fr and fr[-1] in LEAVES + ("main.spin",))
    out = {
        "samples": total,
        "leaves": leaves,
        "reach": 100.0 * reach / leaves if leaves else 0.0,
        "rooted": 100.0 * rooted / leaves if leaves else 0.0,
        "caller": 100.0 * spin / total if total else 0.0,
        "caller_truth": 100.0 * truth / total if total else 0.0,
    }
    under = {l: sum(c for fr, c in leaf_rows if fr[-1] == l and fr[-2:-1] == ["main.spin"])
             for l in LEAVES}
    own = {l: sum(c for fr, c in leaf_rows if fr[-1] == l) for l in LEAVES}
    for l in LEAVES:
        short = l.split(".")[1]
        out["split_" + short] = 100.0 * under[l] / sum(under.values()) if sum(under.values()) else 0.0
        out["own_" + short] = 100.0 * own[l] / leaves if leaves else 0.0
    return out


def main():
    kind, path = sys.argv[1], sys.argv[2]
    rows = from_folded(path) if kind == "folded" else from_perf(path)
    for key, value in shares(rows).items():
        print(key, ("%.1f" % value) if isinstance(value, float) else value)


if __name__ == "__main__":
    main()
