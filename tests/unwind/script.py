# script.py — pure-Python CPU work for Debian's python3 (built without frame pointers).
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        fib(18)


work(1.2)
print("done")
