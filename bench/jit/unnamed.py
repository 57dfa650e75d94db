#!/usr/bin/env python3
"""Unnamed share of on-CPU self time: the percentage of samples whose leaf frame no symbol
names (a raw address `0x7f...`, or `object+0xOFFSET`).

  unnamed.py folded FILE.folded        Osprey's folded stacks (frames `;`-separated, count last)
  unnamed.py perf PERF.data            `perf report --sort sym` of a perf recording
"""
import re
import subprocess
import sys

HEX = re.compile(r"^(0x[0-9a-fA-F]+|.*\+0x[0-9a-fA-F]+)$")


def folded(path):
    total = unnamed = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(count)
            total += n
            if HEX.match(stack.rsplit(";", 1)[-1]):
                unnamed += n
    return 100.0 * unnamed / total if total else 0.0


def perf(path):
    out = subprocess.run(["perf", "report", "-i", path, "--sort", "sym", "--stdio",
                          "--no-children", "-g", "none", "--percent-limit", "0"],
                         capture_output=True, text=True, check=True).stdout
    unnamed = 0.0
    for line in out.splitlines():
        m = re.match(r"\s*([0-9.]+)%\s+\[(.)\]\s+(\S+)", line)
        if m and re.match(r"^0x[0-9a-fA-F]+$", m.group(3)):
            unnamed += float(m.group(1))
    return unnamed


if __name__ == "__main__":
    kind, path = sys.argv[1], sys.argv[2]
    print("%.1f" % (folded(path) if kind == "folded" else perf(path)))
