# script.py — pure-Python CPU work for Debian's python3 (built without frame pointers).
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(seconds):
    end = time.thread_time() + seconds  # CPU time: the same work on a loaded machine
    while time.thread_time() < end:
        fib(18)


work(1.2)
print("done")
