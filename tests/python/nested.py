# Python calling C calling back into Python (tests/e2e-python.sh): outer_site calls the C
# extension's callback.call, which calls inner_site, which works; for SECONDS.
import sys
import time

import callback


def inner_site():
    s = 0
    for i in range(20000):
        s += i * i
    return s


def outer_site():
    return callback.call(inner_site)


end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    outer_site()
print("done")
