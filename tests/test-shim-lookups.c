/* test-shim-lookups.c — the interposers look the C library's function up once, not at every
 * call.
 *
 * Linked with the shim's archive whole and -Wl,--wrap=osp__next_symbol_lookup, so every
 * lookup (osp__next_symbol with an empty cache) passes through the wrapper below and is
 * counted by name. The program makes each call many times (read, write, readv, writev, poll
 * and nanosleep that cannot block, dup and close, fcntl, the signal mask read back; sigaction
 * too, not counted: libc.c looks it up itself) and fails when any name was looked up more than
 * once. Run off (no OSPREY_PROFILE) and on ("on" as argv[1]: OSPREY_PROFILE set by the test,
 * profiling active): the same. Behaviour, not speed: bench/guard/ counts the instructions.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "osprey_prof.h"

#define ROUNDS 1000

void *__real_osp__next_symbol_lookup(_Atomic(void *) *cache, const char *name);

static const char *const watched[] = {"read",  "write",   "readv",       "writev",
                                      "poll",  "close",   "dup",         "nanosleep",
                                      "fcntl", "fcntl64", "sigprocmask", "pthread_sigmask"};
#define WATCHED (sizeof watched / sizeof watched[0])
static _Atomic int lookups[WATCHED];

void *__wrap_osp__next_symbol_lookup(_Atomic(void *) *cache, const char *name)
{
    for (size_t i = 0; i < WATCHED; i++)
        if (strcmp(name, watched[i]) == 0)
            atomic_fetch_add(&lookups[i], 1);
    return __real_osp__next_symbol_lookup(cache, name);
}

int main(int argc, char **argv)
{
    int want_on = argc > 1 && strcmp(argv[1], "on") == 0;
    if (osp_prof_active() != want_on) {
        fprintf(stderr, "test-shim-lookups: profiling is %s, expected %s\n",
                osp_prof_active() ? "on" : "off", want_on ? "on" : "off");
        return 1;
    }
    int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (zero < 0 || null < 0) {
        perror("test-shim-lookups: /dev/zero, /dev/null");
        return 1;
    }
    char c = 0;
    struct iovec v = {&c, 1};
    struct pollfd p = {zero, POLLIN, 0};
    struct timespec none = {0, 0};
    sigset_t mask;
    struct sigaction act;
    for (int i = 0; i < ROUNDS; i++) {
        const char *failed = read(zero, &c, 1) != 1                         ? "read"
                             : write(null, &c, 1) != 1                      ? "write"
                             : readv(zero, &v, 1) != 1                      ? "readv"
                             : writev(null, &v, 1) != 1                     ? "writev"
                             : poll(&p, 1, 0) != 1                          ? "poll"
                             : fcntl(zero, F_GETFD) < 0                     ? "fcntl"
                             : close(dup(zero)) != 0                        ? "close(dup())"
                             : sigprocmask(SIG_BLOCK, NULL, &mask) != 0     ? "sigprocmask"
                             : pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0 ? "pthread_sigmask"
                             : sigaction(SIGUSR1, NULL, &act) != 0          ? "sigaction"
                                                                            : NULL;
        nanosleep(&none, NULL); /* unguarded (it cannot block): EINTR allowed */
        if (failed != NULL) {
            perror(failed);
            return 1;
        }
    }
    int bad = 0;
    for (size_t i = 0; i < WATCHED; i++) {
        int n = atomic_load(&lookups[i]);
        printf("%-16s %d lookups in %d calls\n", watched[i], n, ROUNDS);
        if (n > 1) {
            fprintf(stderr, "test-shim-lookups: %s looked up %d times (at most once)\n", watched[i],
                    n);
            bad = 1;
        }
    }
    return bad;
}
