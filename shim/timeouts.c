/* timeouts.c — the sockets a signal cuts short: which descriptors have SO_RCVTIMEO or
 * SO_SNDTIMEO set.
 *
 * A blocking call on a socket is restarted after a handler (SA_RESTART) unless the socket has a
 * timeout of that direction; then it returns EINTR, whatever the call: recv or read, send or
 * write (signal(7); the kernel's sock_intr_errno). guard.c blocks SIGPROF around such calls,
 * but read and write are the commonest calls there are: they are guarded only on a descriptor
 * this set holds. It is learnt where timeouts come from: the program's setsockopt (guard.c
 * asks the kernel again after each SO_*TIMEO), a descriptor inherited across exec (looked at
 * once, at boot: /proc/self/fd), one received (SCM_RIGHTS) or accepted from a listener that has
 * a timeout (asked), and the dup family (copied); close forgets it. A descriptor this set
 * cannot hold (beyond its size) counts as having a timeout: guarded for nothing costs two
 * mask changes, unguarded may cost the program an EINTR. A count of the bits set lets read
 * and write pass on at a glance (osp__timed_below) while no descriptor has one, the common case.
 * Beside it, the pipes the program made where the shim times waits (osp__piped_fds): in the set
 * too, so that read and write look further, then timed by their clock reads, not guarded.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"

_Atomic uint64_t osp__timed_fds[OSP__TIMED_FDS / 64];
_Atomic uint64_t osp__piped_fds[OSP__TIMED_FDS / 64];
_Atomic uint32_t osp__timed_below = OSP__TIMED_FDS;
static _Atomic uint32_t timed_count; /* bits set: counted before, uncounted after */

/* osp__timed_below from the count. The last to store saw the count unchanged after its store,
 * so the value left is the latest count's, whichever threads race here (sequentially
 * consistent: these change only when a descriptor's timeout does). */
static void below_update(void)
{
    for (;;) {
        uint32_t n = atomic_load(&timed_count);
        atomic_store(&osp__timed_below, n == 0 ? OSP__TIMED_FDS : 0);
        if (atomic_load(&timed_count) == n)
            return;
    }
}

static void count_add(int32_t d)
{
    if (d > 0)
        atomic_store(&osp__timed_below, 0); /* before the bit is set */
    atomic_fetch_add(&timed_count, (uint32_t)d);
    below_update();
}

void osp__fd_timed_set(int fd, int timed)
{
    if (fd < 0 || fd >= OSP__TIMED_FDS)
        return;
    uint64_t bit = 1ull << (fd % 64);
    _Atomic uint64_t *word = &osp__timed_fds[fd / 64];
    _Atomic uint64_t *piped = &osp__piped_fds[fd / 64];
    /* Whatever it is now, no longer a pipe of ours (a new descriptor, a socket's timeout). */
    if (atomic_load_explicit(piped, memory_order_relaxed) & bit)
        atomic_fetch_and_explicit(piped, ~bit, memory_order_relaxed);
    /* Read first: most descriptors never had a timeout, and their page stays untouched. */
    uint64_t now = atomic_load_explicit(word, memory_order_relaxed);
    /* The count never falls below the bits set: counted before a bit is set, uncounted after
     * it is cleared (or when another thread had set it already). */
    if (timed && !(now & bit)) {
        count_add(1);
        if (atomic_fetch_or_explicit(word, bit, memory_order_relaxed) & bit)
            count_add(-1);
    } else if (!timed && (now & bit)) {
        if (atomic_fetch_and_explicit(word, ~bit, memory_order_relaxed) & bit)
            count_add(-1);
    }
}

void osp__fd_piped_set(int fd)
{
    if (fd < 0 || fd >= OSP__TIMED_FDS)
        return;
    osp__fd_timed_set(fd, 1);
    atomic_fetch_or_explicit(&osp__piped_fds[fd / 64], 1ull << (fd % 64), memory_order_relaxed);
}

void osp__fd_timed_copy(int fd, int to)
{
    if (osp__fd_piped(fd))
        osp__fd_piped_set(to);
    else
        osp__fd_timed_set(to, osp__fd_timed(fd));
}

/* Does the socket have a timeout of this kind? Not a socket, or unknown: no. */
static int has_timeout(int fd, int option)
{
    struct timeval t = {0, 0};
    socklen_t len = sizeof t;
    if (osp__sys(SYS_getsockopt, fd, SOL_SOCKET, option, (long)&t, (long)&len) != 0)
        return 0;
    return t.tv_sec != 0 || t.tv_usec != 0;
}

void osp__fd_timed_ask(int fd)
{
    if (fd < 0 || fd >= OSP__TIMED_FDS)
        return;
    int saved = errno;
    osp__fd_timed_set(fd, has_timeout(fd, SO_RCVTIMEO) || has_timeout(fd, SO_SNDTIMEO));
    errno = saved;
}

void osp__fds_timed_scan(void)
{
    int saved = errno;
    int dir = (int)osp__sys(SYS_openat, AT_FDCWD, (long)"/proc/self/fd",
                            O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0);
    if (dir < 0) {
        errno = saved;
        return; /* no /proc (a sandbox): inherited timeouts stay unknown */
    }
    _Alignas(8) char buf[4096];
    long n;
    while ((n = osp__sys(SYS_getdents64, dir, (long)buf, sizeof buf, 0, 0)) > 0) {
        for (long at = 0; at < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(void *)(buf + at);
            at += d->d_reclen;
            if (d->d_name[0] < '0' || d->d_name[0] > '9')
                continue;
            int fd = atoi(d->d_name);
            if (fd != dir)
                osp__fd_timed_ask(fd);
        }
    }
    osp__sys(SYS_close, dir, 0, 0, 0, 0);
    errno = saved;
}

void osp__fds_timed_forget(unsigned int first, unsigned int last)
{
    if (first >= OSP__TIMED_FDS)
        return;
    if (last >= OSP__TIMED_FDS)
        last = OSP__TIMED_FDS - 1;
    for (unsigned int fd = first; fd <= last;) {
        _Atomic uint64_t *word = &osp__timed_fds[fd / 64];
        if (fd % 64 == 0 && last - fd >= 63) {
            if (atomic_load_explicit(&osp__piped_fds[fd / 64], memory_order_relaxed) != 0)
                atomic_store_explicit(&osp__piped_fds[fd / 64], 0, memory_order_relaxed);
            if (atomic_load_explicit(word, memory_order_relaxed) != 0) {
                uint64_t was = atomic_exchange_explicit(word, 0, memory_order_relaxed);
                if (was != 0)
                    count_add(-__builtin_popcountll(was));
            }
            fd += 64;
        } else {
            osp__fd_timed_set((int)fd, 0);
            fd++;
        }
    }
}
