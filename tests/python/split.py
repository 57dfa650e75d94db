# A Python program with a known split (tests/e2e-python.sh): alpha, beta and gamma do 50%, 30%
# and 20% of the same work in rounds for SECONDS; one thread sleeps in time.sleep at
# sleeper_site, one waits in queue.get at getter_site, until the end. Prints "done".
import queue
import sys
import threading
import time


def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def alpha():
    return work(50000)


def beta():
    return work(30000)


def gamma():
    return work(20000)


def sleeper_site(stop):
    while not stop.is_set():
        time.sleep(0.05)


def getter_site(q):
    q.get()


def main(seconds):
    stop, q = threading.Event(), queue.Queue()
    threads = [threading.Thread(target=sleeper_site, args=(stop,)),
               threading.Thread(target=getter_site, args=(q,))]
    for t in threads:
        t.start()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        alpha()
        beta()
        gamma()
    stop.set()
    q.put(None)
    for t in threads:
        t.join()
    print("done")


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
