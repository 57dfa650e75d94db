// throw.cpp — exceptions thrown and caught while the program is sampled at 10 kHz: the
// program's own unwinding (libgcc's, from the same .eh_frame) must be untouched. Prints how
// many it caught, which must match an unprofiled run's.
#include <cstdio>
#include <ctime>
#include <stdexcept>

static volatile int depth_sink;

__attribute__((noinline)) static void thrower(int depth)
{
    if (depth == 0)
        throw std::runtime_error("deep");
    thrower(depth - 1);
    depth_sink = depth;
}

__attribute__((noinline)) static long catch_many(long n)
{
    long caught = 0;
    for (long i = 0; i < n; i++) {
        try {
            thrower(static_cast<int>(i % 8));
        } catch (const std::runtime_error &) {
            caught++;
        }
    }
    return caught;
}

int main()
{
    long total = 0;
    std::clock_t end = std::clock() + CLOCKS_PER_SEC; // a second of CPU time, loaded or not
    while (std::clock() < end)
        total += catch_many(1000) == 1000 ? 1 : 0;
    std::printf("%s\n", total > 0 ? "all caught" : "none");
    return 0;
}
