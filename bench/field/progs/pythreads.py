"""bench/field/progs/pythreads.py — Python threads: two in pure Python (holding the GIL in
turn), two in hashlib over large buffers (which lets the GIL go); the results printed."""
import hashlib
import sys
import threading

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
results = {}


def pure(name):
    total = 0
    for i in range(ROUNDS * 400000):
        total += (i * i) % 7
    results[name] = total


def hashing(name):
    data = bytes(range(256)) * 4096
    h = hashlib.sha256()
    for _ in range(ROUNDS * 40):
        h.update(data)
    results[name] = h.hexdigest()[:16]


threads = [threading.Thread(target=pure, args=("pure%d" % i,)) for i in range(2)]
threads += [threading.Thread(target=hashing, args=("hash%d" % i,)) for i in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for name in sorted(results):
    print(name, results[name])
