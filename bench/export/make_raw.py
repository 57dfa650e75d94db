#!/usr/bin/env python3
"""Write a large raw profile (proto/raw-format.md) for the export benchmark: SAMPLES rows over
STACKS distinct stacks and IMAGES real shared libraries of this machine, so that llvm-symbolizer
has real objects and real addresses to resolve.

  make_raw.py OUT.raw.json [--samples 1000000] [--stacks 10000] [--images 50] [--seed 1]

Each image is mapped at a made-up base; its pcs lie in its executable PT_LOAD segment (read with
readelf). Stacks are 8 to 40 frames deep, leaf first, with a skewed popularity (a few hot
stacks, a long tail); 8 threads take turns, each in stacks of its own; one row in ten is
waiting.
"""
import argparse
import glob
import json
import random
import re
import subprocess


def text_segment(path):
    """(file vaddr, size) of the object's PF_X PT_LOAD segment, or None."""
    try:
        out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in out.splitlines():
        fields = line.split()
        if fields[:1] == ["LOAD"] and "E" in fields[6:-1]:
            return int(fields[2], 16), int(fields[5], 16)
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--samples", type=int, default=1000000)
    parser.add_argument("--stacks", type=int, default=10000)
    parser.add_argument("--images", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    images = []
    candidates = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/*.so.*"))
    rng.shuffle(candidates)
    base = 0x7f0000000000
    for path in candidates:
        if len(images) == args.images:
            break
        if not re.search(r"\.so\.\d+$", path):
            continue
        segment = text_segment(path)
        if segment is None or segment[1] < 4096:
            continue
        vaddr, size = segment
        images.append({"path": path, "base": base, "slide": base, "text": base + vaddr,
                       "text_size": size, "arch": "x86_64"})
        base += (vaddr + size + 0x200000) & ~0xfff
    # A pool of functions-ish addresses per image: stacks reuse them, as real stacks do.
    pools = [[image["text"] + rng.randrange(image["text_size"]) for _ in range(400)]
             for image in images]
    stacks = []
    for _ in range(args.stacks):
        depth = rng.randint(8, 40)
        stacks.append([rng.choice(pools[rng.randrange(len(pools))]) for _ in range(depth)])
    threads = [{"fiber": 0 if t == 0 else 1000 + t, "label": "main" if t == 0 else "worker",
                "tid": 1000 + t} for t in range(8)]
    rate = 997
    period = 1_000_000_000 // rate
    samples = []
    clock = [0] * len(threads)
    # Each thread runs its own code (stack s belongs to thread s % 8), with a skewed
    # popularity, so a few stacks are hot, as in real profiles.
    own = [[s for s in range(args.stacks) if s % len(threads) == t] for t in range(len(threads))]
    popularity = [[1.0 / (i + 1) for i in range(len(stacks_of))] for stacks_of in own]
    picks = [rng.choices(own[t], weights=popularity[t], k=args.samples // len(threads) + 1)
             for t in range(len(threads))]
    for i in range(args.samples):
        t = i % len(threads)
        clock[t] += period
        waiting = rng.random() < 0.1
        samples.append([clock[t], t, picks[t][i // len(threads)], 1 if waiting else 0])
    end = max(clock) + period
    raw = {"version": 1, "pid": 4242, "exe": images[0]["path"], "rate_hz": rate,
           "platform": "linux-x86_64", "start_unix_ns": 1764410000000000000,
           "end_unix_ns": 1764410000000000000 + end, "images": images, "threads": threads,
           "stacks": stacks, "samples": samples, "dropped": 0, "exit": {"status": "exited"}}
    with open(args.out, "w") as f:
        json.dump(raw, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
