#!/usr/bin/env python3
"""exchange.py PID OSP_RING_H DIR — greetings that give up, and one that confirms.

Greets the collector of profiled process PID (its abstract socket "osprey-forks:/osprey-PID-...",
found in /proc/net/unix) as a later image does (proto/osp_ring.h, "Forked children"): a
greeting carrying a ring, three times:
  gaveup     the answer read, then closed without a confirm (as an image whose wait ended);
  noread     closed at once after the greeting, the answer never read;
  confirmed  the answer read and confirmed.
Each "ring" is a file DIR/TAG.ring of one ring header's size with the ring's magic and nothing
else: a collector started for it rejects it and writes why into its header (daemon_error),
which is how this script sees that the greeting was followed. Prints one line per greeting:
its name, the answer's byte ("unread", or "none" when none came in 10 s) and whether its file
was written to ("followed") or not ("left") once the confirmed one's was, or after 30 s.
The collector must follow the confirmed one only.
"""
import array
import os
import re
import socket
import struct
import sys
import time

target, header, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
with open(header) as f:
    text = f.read()


def define(name):
    found = re.search(r"#define %s\s+(?:UINT64_C\()?(0x[0-9a-fA-F]+|\d+)" % name, text)
    return int(found.group(1), 0)


magic, abi = define("OSP_FORK_HELLO_MAGIC"), define("OSP_RING_ABI_VERSION")
header_size, max_path = define("OSP_RING_HEADER_SIZE"), define("OSP_MAX_PATH")
name_size, ring_magic = define("OSP_RING_NAME_SIZE"), define("OSP_RING_MAGIC")

prefix = "@osprey-forks:/osprey-%s-" % target
address = None
for _ in range(200):
    with open("/proc/net/unix") as table:
        for line in table:
            fields = line.split()
            if len(fields) >= 8 and fields[7].startswith(prefix):
                address = "\0" + fields[7][1:]
    if address:
        break
    time.sleep(0.05)
if address is None:
    sys.exit("no fork socket for process %s" % target)


def greet(tag, read_answer, confirm):
    ring = "/osprey-%d-%s" % (os.getpid(), tag)
    out = os.path.join(out_dir, "%s.raw.json" % tag)
    hello = struct.pack("<IIiIII", magic, abi, os.getpid(), 0, 0, 0)
    hello += ring.encode().ljust(name_size, b"\0") + out.encode().ljust(max_path + 1, b"\0")
    hello = hello.ljust((len(hello) + 3) // 4 * 4, b"\0")
    fd = os.open(os.path.join(out_dir, tag + ".ring"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, struct.pack("<Q", ring_magic).ljust(header_size, b"\0"))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(address)
    s.sendmsg([hello], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    os.close(fd)
    answer = "unread"
    if read_answer:
        s.settimeout(10)
        try:
            got = s.recv(1)
            answer = got.decode() if got else "eof"
        except socket.timeout:
            answer = "none"
    if confirm and answer == "T":
        s.send(b"C")
    s.close()
    return answer


def followed(tag):
    with open(os.path.join(out_dir, tag + ".ring"), "rb") as f:
        return f.read().rstrip(b"\0") != struct.pack("<Q", ring_magic).rstrip(b"\0")


tags = [("gaveup", True, False), ("noread", False, False), ("confirmed", True, True)]
answers = [greet(*t) for t in tags]
end = time.monotonic() + 30
while not followed("confirmed") and time.monotonic() < end:
    time.sleep(0.05)
time.sleep(0.2)  # a greeting wrongly followed before it would be written to by now too
for (tag, _, _), answer in zip(tags, answers):
    print(tag, answer, "followed" if followed(tag) else "left", flush=True)
