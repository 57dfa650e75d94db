"""cpu.py — a pure-Python CPU workload for bench/unwind: recursion, dict and string work,
sorting; ROUNDS (argv[1]) repetitions of the same mix. Prints a checksum."""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def build_table(n):
    table = {}
    for i in range(n):
        table["key-%d" % i] = i * 2
    return table


def text_work(words):
    out = []
    for w in words:
        out.append(w.upper()[::-1])
    return sorted(out)


def work():
    total = fib(21)
    table = build_table(60000)
    total += sum(len(s) for s in text_work(list(table)[:30000]))
    return total + len(table)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    total = 0
    for _ in range(rounds):
        total += work()
    print(total)


main()
