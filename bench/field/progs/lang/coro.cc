// A C++20 coroutine generator (co_yield) of primes, summed by its caller.
#include <coroutine>
#include <cstdio>
#include <cstdlib>
#include <exception>

struct generator {
    struct promise_type {
        long value = 0;
        generator get_return_object() { return generator{std::coroutine_handle<promise_type>::from_promise(*this)}; }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        std::suspend_always yield_value(long v) noexcept { value = v; return {}; }
        void return_void() {}
        void unhandled_exception() { std::terminate(); }
    };
    std::coroutine_handle<promise_type> h;
    explicit generator(std::coroutine_handle<promise_type> handle) : h(handle) {}
    generator(const generator &) = delete;
    ~generator() { if (h) h.destroy(); }
    bool next() { h.resume(); return !h.done(); }
    long value() const { return h.promise().value; }
};

__attribute__((noinline)) static bool is_prime(long n) {
    if (n < 2) return false;
    for (long d = 2; d * d <= n; d++)
        if (n % d == 0) return false;
    return true;
}

static generator primes(long limit) {
    for (long n = 2; n < limit; n++)
        if (is_prime(n)) co_yield n;
}

int main(int argc, char **argv) {
    long limit = argc > 1 ? atol(argv[1]) : 3000000;
    long sum = 0, count = 0;
    for (generator g = primes(limit); g.next();) {
        sum += g.value();
        count++;
    }
    printf("%ld %ld\n", count, sum);
    return 0;
}
