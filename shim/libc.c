/* libc.c — the real C library behind the shim's interposers.
 *
 * Owns finding the next definition of a function the shim interposes (dlsym(RTLD_NEXT)): the
 * C library's, which every interposer calls through, and which the shim's own code calls
 * instead of the interposed name (an internal call to `nanosleep` or `kill` would land in the
 * shim's own wrapper, above the code that makes it).
 *
 * The names below are looked up once from the constructor, before the program's main runs:
 * a wrapper that first runs inside a signal handler (raise and kill are async-signal-safe,
 * crash handlers call them) must not be the one to call dlsym.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "osp_base.h"

static const char *const interposed[] = {
    "pthread_create",
    "pthread_setname_np",
    "sigaction",
    "signal",
    "bsd_signal",
    "sysv_signal",
    "raise",
    "kill",
    "pthread_kill",
    "sigqueue",
    "setitimer",
    "pthread_sigmask",
    "sigprocmask",
    "execve",
    "execv",
    "execvp",
    "execvpe",
    "fexecve",
    "execveat",
    "nanosleep",
    "clock_nanosleep",
    "usleep",
    "sleep",
    "pause",
    "poll",
    "ppoll",
    "select",
    "pselect",
    "epoll_wait",
    "epoll_pwait",
    /* Async-signal-safe calls a handler of the program's may be the first to make. */
    "read",
    "write",
    "readv",
    "writev",
    "close",
    "dup",
    "dup2",
    "fcntl",
    "accept",
    "connect",
    "recv",
    "recvfrom",
    "recvmsg",
    "send",
    "sendto",
    "sendmsg",
    "setsockopt",
    "socket",
    "socketpair",
    "sigsuspend",
    "pthread_mutex_lock",
    "pipe",
    "pipe2",
};
#define OSP__INTERPOSED (sizeof(interposed) / sizeof(interposed[0]))
/* Written by the constructor before the program's main runs; read-only afterwards. */
static void *interposed_next[OSP__INTERPOSED];

void osp__libc_resolve_all(void)
{
    for (size_t i = 0; i < OSP__INTERPOSED; i++)
        interposed_next[i] = dlsym(RTLD_NEXT, interposed[i]);
}

/* osp__next_symbol's first call for a cache (osp_base.h). Async-signal-safe once the
 * constructor has run (a table lookup, no dlsym). */
void *osp__next_symbol_lookup(_Atomic(void *) *cache, const char *name)
{
    void *sym = NULL;
    for (size_t i = 0; i < OSP__INTERPOSED && sym == NULL; i++)
        if (strcmp(interposed[i], name) == 0)
            sym = interposed_next[i];
    if (sym == NULL)
        sym = dlsym(RTLD_NEXT, name); /* before the constructor, or not in the table */
    if (sym == NULL)
        errno = ENOSYS;
    else
        atomic_store_explicit(cache, sym, memory_order_relaxed);
    return sym;
}

int osp__mutex_lock(pthread_mutex_t *m)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "pthread_mutex_lock");
    int (*fn)(pthread_mutex_t *);
    if (sym == NULL)
        return ENOSYS;
    memcpy(&fn, &sym, sizeof(fn));
    return fn(m);
}

osp__sigaction_fn osp__libc_sigaction(void)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "sigaction");
    osp__sigaction_fn fn;
    memcpy(&fn, &sym, sizeof(fn));
    return fn;
}
