/* loop.c — one round: a read of one byte from /dev/zero and an uncontended mutex locked and
 * unlocked; ROUNDS rounds (argv[1], default 200000) in rounds(), the function callgrind counts.
 * With argv[2] "mutex", a round is the mutex alone (bench/waits/mutex.sh); with "pipe", a byte
 * written to a pipe the program made and read back, neither call blocking (bench/waits/
 * cost.sh's callgrind rows); with "floor", the same through the least a timing wrapper must do
 * (floor_read, floor_write: bench/guard/run.sh's floor row). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int pipe_fds[2];

/* n rounds of a byte written to the pipe by wr and read back by rd. */
#define PIPE_ROUNDS(name, wr, rd)                                                                  \
    __attribute__((noinline)) long name(long n)                                                    \
    {                                                                                              \
        char c = 'x';                                                                              \
        long got = 0;                                                                              \
        for (long i = 0; i < n; i++) {                                                             \
            if (wr(pipe_fds[1], &c, 1) == 1)                                                       \
                got += rd(pipe_fds[0], &c, 1);                                                     \
        }                                                                                          \
        return got;                                                                                \
    }
PIPE_ROUNDS(pipe_rounds, write, read)

/* The floor of a wrapper that times a call by its clock reads (mode "floor", plain build only:
 * shim/README.md, "Without the kernel's records"): the counter read before and after, a flag
 * the signal handler would read stored around the call, the length taken from the thread's
 * time to its next sampling point, and the slow way (here: the point moved a period on) only
 * when the call reaches it. No site, no scale, no checks of whether to time at all. */
static __thread struct {
    unsigned long long until;
    int in_call;
} floor_state = {1ull << 40, 0};

#define FLOOR_WRAPPER(ret, name, params, args)                                                     \
    __attribute__((noinline)) static ret floor_##name params                                       \
    {                                                                                              \
        unsigned long long t0 = __builtin_ia32_rdtsc();                                            \
        floor_state.in_call = 1;                                                                   \
        __atomic_signal_fence(__ATOMIC_SEQ_CST);                                                   \
        ret r = name args;                                                                         \
        unsigned long long length = __builtin_ia32_rdtsc() - t0;                                   \
        __atomic_signal_fence(__ATOMIC_SEQ_CST);                                                   \
        floor_state.in_call = 0;                                                                   \
        if (length < floor_state.until)                                                            \
            floor_state.until -= length;                                                           \
        else                                                                                       \
            floor_state.until = 1ull << 40;                                                        \
        return r;                                                                                  \
    }
#if defined(__x86_64__)
FLOOR_WRAPPER(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n))
FLOOR_WRAPPER(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n))

PIPE_ROUNDS(floor_rounds, floor_write, floor_read)
#else
__attribute__((noinline)) long floor_rounds(long n)
{
    return pipe_rounds(n);
}
#endif

static int floor_mode;

__attribute__((noinline)) long rounds(int fd, long n, int mutex_only)
{
    char c;
    long got = 0;
    if (pipe_fds[0] != pipe_fds[1])
        return floor_mode ? floor_rounds(n) : pipe_rounds(n);
    for (long i = 0; i < n; i++) {
        got += mutex_only ? 1 : read(fd, &c, 1);
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
    }
    return got;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) {
        perror("/dev/zero");
        return 1;
    }
    floor_mode = argc > 2 && strcmp(argv[2], "floor") == 0;
    if (argc > 2 && (strcmp(argv[2], "pipe") == 0 || floor_mode) && pipe(pipe_fds) != 0) {
        perror("pipe");
        return 1;
    }
    long got = rounds(fd, n, argc > 2 && strcmp(argv[2], "mutex") == 0);
    close(fd);
    return got == n ? 0 : 1;
}
