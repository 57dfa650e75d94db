# A pure-Python workload of fixed size for bench/python/run.sh: nested calls 12 deep, then
# integer arithmetic; prints the process's own CPU time (every thread's, the profiler's
# handler included) as "cpu SECONDS".
import sys
import time


def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def nest(depth, n):
    return leaf(n) if depth == 0 else nest(depth - 1, n)


def main(rounds):
    start = time.process_time()
    total = 0
    for _ in range(rounds):
        total += nest(12, 2000)
    print("cpu %.4f" % (time.process_time() - start), total & 1)


main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
