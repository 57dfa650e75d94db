#!/usr/bin/env python3
"""flood.py PID SECONDS — another user's silent connections to a profiled process's collector.

Finds the collector's abstract socket for process PID in /proc/net/unix (as anyone can: its
name is "osprey-forks:" and the ring's name, "/osprey-PID-..."), then for SECONDS keeps up to
100 connections open that never send a byte, opening a new one each millisecond in place of
any the collector closed. Prints "opened N closed_by_peer M": how many it made, and how many the
collector closed (unread: they sent nothing) while the program ran.
"""
import signal
import socket
import sys
import time

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # the test stops it: say what it did

pid, seconds = sys.argv[1], float(sys.argv[2])
prefix = "@osprey-forks:/osprey-%s-" % pid
end = time.monotonic() + seconds
name = None
opened = closed = 0
held = []


def closed_by_peer(s):
    try:
        return s.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


try:
    while time.monotonic() < end:
        if name is None:
            with open("/proc/net/unix") as table:
                for line in table:
                    fields = line.split()
                    if len(fields) >= 8 and fields[7].startswith(prefix):
                        name = "\0" + fields[7][1:]
            if name is None:
                time.sleep(0.002)
                continue
        still = []
        for s in held:
            if closed_by_peer(s):
                closed += 1
                s.close()
            else:
                still.append(s)
        held = still
        if len(held) < 100:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            try:
                s.connect(name)
                held.append(s)
                opened += 1
            except (BlockingIOError, InterruptedError):
                s.close()
            except OSError:  # the collector is gone: the program has ended
                s.close()
                break
        time.sleep(0.001)
finally:
    print("opened %d closed_by_peer %d" % (opened, closed))
