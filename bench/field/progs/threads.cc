// bench/field/progs/threads.cc — std::thread workers that each throw and catch through a few
// frames while computing, and main's exit status from a last uncaught-then-caught throw: 5.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

__attribute__((noinline)) static long work(long seed, int depth)
{
    if (depth == 0) {
        long x = seed;
        for (int i = 0; i < 2000; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        if ((x & 7) == 0)
            throw std::runtime_error("odd " + std::to_string(x & 0xff));
        return x & 0xffff;
    }
    return work(seed + depth, depth - 1) + 1;
}

__attribute__((noinline)) static void worker(int id, int rounds, long *out)
{
    long total = 0;
    for (int r = 0; r < rounds; r++) {
        try {
            total += work(r * 131 + id, 6);
        } catch (const std::exception &e) {
            total += (long)std::string(e.what()).size();
        }
    }
    *out = total;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200000;
    std::vector<long> totals(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; i++)
        threads.emplace_back(worker, i, rounds, &totals[i]);
    for (auto &t : threads)
        t.join();
    for (long t : totals)
        printf("%ld\n", t);
    try {
        throw std::logic_error("done");
    } catch (const std::logic_error &) {
        return 5;
    }
}
