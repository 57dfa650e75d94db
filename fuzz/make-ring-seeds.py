#!/usr/bin/env python3
"""Write the seed inputs of fuzz-ring (the layout is described at the top of fuzz-ring.c):
well-formed event rings as the shim writes them, so the fuzzer starts from records the parser
accepts and mutates from there. Usage: make-ring-seeds.py OUTPUT_DIR"""
import os
import struct
import sys

PAD, THREAD_START, THREAD_END, SAMPLE, REPEAT, IMAGE, EXIT = range(7)


def align8(b):
    return b + b"\0" * (-len(b) % 8)


def rec(rtype, body):
    body = align8(body)
    return struct.pack("<II", rtype, 8 + len(body)) + body


def thread_start(slot, gen, fiber, tid, label):
    label = label.encode()
    return rec(THREAD_START, struct.pack("<IIqiI", slot, gen, fiber, tid, len(label)) + label)


def thread_end(slot, gen):
    return rec(THREAD_END, struct.pack("<II", slot, gen))


def sample(t, slot, gen, state, pcs):
    return rec(SAMPLE, struct.pack("<QIIII", t, slot, gen, state, len(pcs)) +
               b"".join(struct.pack("<Q", pc) for pc in pcs))


def repeat(t, slot, gen):
    return rec(REPEAT, struct.pack("<QIIII", t, slot, gen, 1, 0))


def image(base, slide, text, text_size, arch, main, path):
    path = path.encode()
    return rec(IMAGE, struct.pack("<QQQQ16sII", base, slide, text, text_size, arch.encode(),
                                  1 if main else 0, len(path)) + path)


def exit_record(end_ns, dropped):
    return rec(EXIT, struct.pack("<QQ", end_ns, dropped))


def ring(size_shift, flags, start_mono, tail, records, steps=None, platform="linux-x86_64"):
    """Lay records out from tail in a data area of 64 << size_shift bytes, padding before a
    record that would cross the end, exactly as the shim does."""
    size = 64 << size_shift
    data = bytearray(size)
    pos = tail
    for r in records:
        off = pos % size
        if off + len(r) > size:
            pad = size - off
            data[off:off + 8] = struct.pack("<II", PAD, pad)
            pos += pad
            off = 0
        assert len(r) <= size
        data[off:off + len(r)] = r
        pos += len(r)
    prefix = struct.pack("<BBQQ32s", size_shift, flags, start_mono, tail, platform.encode())
    used = pos - tail
    if steps is None:
        # Rotate so that the bytes the input supplies are exactly [tail, pos).
        return prefix + bytes(data)[:max(used, 0)] if tail % size == 0 and used <= size \
            else prefix + bytes(data) + struct.pack("<h", used // 8)
    return prefix + bytes(data) + b"".join(struct.pack("<h", s) for s in steps)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mono = 1_000_000_000
    main_image = image(0x555555554000, 0x555555554000, 0x555555555000, 0x951, "x86_64", True,
                       "/home/u/hotspot")
    libc = image(0x7f0000000000, 0x7f0000000000, 0x7f0000028000, 0x178000, "x86_64", False,
                 "/lib/x86_64-linux-gnu/libc.so.6")
    stack_a = [0x555555555123, 0x555555555456, 0x7f0000029d90]
    stack_b = [0x555555555200, 0x555555555456, 0x7f0000029d90]
    seeds = {
        # One thread, two samples, an exit: the whole life of a short program.
        "seed-basic": ring(4, 0, mono, 0, [
            main_image, libc, thread_start(0, 1, 0, 4242, "main"),
            sample(mono + 1000, 0, 1, 0, stack_a), sample(mono + 2000, 0, 1, 0, stack_a),
            exit_record(1764410001830000000, 0)]),
        # Two threads, a waiting one repeated, a thread that ends and whose slot is reused.
        "seed-threads": ring(5, 0, mono, 0, [
            main_image, thread_start(0, 1, 0, 4242, "main"),
            thread_start(1, 1, 4243, 4243, "thread"),
            sample(mono + 1000, 1, 1, 0, stack_b), sample(mono + 1000, 0, 1, 1, stack_a),
            repeat(mono + 2000, 0, 1), repeat(mono + 3000, 0, 1), thread_end(1, 1),
            thread_start(1, 2, -1, 4250, "effect"), sample(mono + 4000, 1, 2, 0, stack_a),
            exit_record(1764410001830000000, 3)]),
        # Records wrap around the end of a small data area (a pad record), drained in three
        # steps that each publish whole records: 40, then 24 + 40 (pad, sample), then 56 bytes.
        "seed-wrap": ring(2, 0, mono, 192, [
            thread_start(0, 1, 0, 4242, "main"), sample(mono + 10, 0, 1, 0, stack_a[:1]),
            sample(mono + 20, 0, 1, 0, stack_b)], steps=[5, 8, 7]),
        # Free-running counters far from 0, the tail in the middle of the data area.
        "seed-counter-high": ring(3, 0, mono, 2**40 + 448, [
            thread_start(3, 7, 0, 4242, "main"), sample(mono + 10, 3, 7, 0, stack_a)]),
        # A sample for a slot nobody registered, an orphan repeat, a label with invalid UTF-8.
        "seed-lost": ring(4, 0, mono, 0, [
            sample(mono, 9, 1, 0, stack_a), repeat(mono, 9, 1),
            rec(THREAD_START, struct.pack("<IIqiI", 0, 1, 0, 1, 6) + b"m\xffa\xc3\0n"),
            repeat(mono, 0, 1), sample(mono - 5, 0, 1, 0, [2**63 + 1, 0x1234])]),
        # The longest image path the ABI allows, in a 16 KiB data area.
        "seed-long-path": ring(8, 0, mono, 0, [
            image(0x400000, 0, 0x401000, 0x1000, "aarch64", True, "/" + "p" * 4095),
            thread_start(0, 1, 0, 4242, "main"), sample(mono + 10, 0, 1, 0, [0x401010])]),
        # The image list posted again at exit, as the shim does: the daemon keeps each once.
        "seed-images-again": ring(5, 0, mono, 0, [
            main_image, libc, thread_start(0, 1, 0, 4242, "main"),
            sample(mono + 1000, 0, 1, 0, stack_a), main_image, libc,
            exit_record(1764410001830000000, 0)]),
        # A sample record of 4400 bytes, longer than any valid record, in an 8 KiB data area.
        "seed-oversized-record": ring(7, 0, mono, 0, [rec(SAMPLE, bytes(4392))]),
        # Many distinct stacks under an 8 KiB memory limit (flags: 2 | 3 << 2).
        "seed-memory-limit": ring(6, 2 | 3 << 2, mono, 0, [thread_start(0, 1, 0, 1, "main")] +
                                  [sample(mono + i, 0, 1, i % 2, [0x1000 + i, 0x2000])
                                   for i in range(60)]),
    }
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
