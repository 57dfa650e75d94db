/* greeting.c — the collector's answer to a greeting, and a forked child's greeting left open.
 *
 * Owns the greeter's side of the exchange after its greeting is sent (proto/osp_ring.h,
 * "Forked children"): the collector's answer read, waited for up to OSP__GREETING_ANSWER_MS,
 * and the confirm; and a forked child's greeting deferred: sent at the fork, its answer
 * looked for later without waiting (at its samples, from the handler) and waited for only
 * where the child execs having recorded something, or exits (shim/README.md, "The collector's
 * answer"). A child that execs with nothing recorded gives it up (the collector drops it at
 * EOF) and its next image greets instead: a shell's command pays one exchange, not two.
 *
 * DESIGN. The state is one atomic (deferred_state), claimed PENDING -> BUSY by whoever looks
 * (a handler on any thread of the child, or the exec or exit on another), so that two never
 * read or write the socket at once; a handler that finds it BUSY leaves it. The socket's
 * device and inode are kept: a program may dup2 onto any descriptor (a shell's redirection
 * before exec), and nothing is read from or written to a descriptor that is no longer ours.
 * Raw system calls only, none that blocks in the handler: async-signal-safe.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include "osp_base.h"
#include "osp_core.h"

/* One byte on `sock`, sent (`out`) or received without waiting; 1, 0 at EOF, or -errno.
 * Async-signal-safe. */
static long one_byte(long sock, char *byte, int out)
{
    struct iovec iov = {byte, 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    long got;
    do
        got = osp__sys(out ? SYS_sendmsg : SYS_recvmsg, sock, (long)&msg,
                       MSG_DONTWAIT | (out ? MSG_NOSIGNAL : 0), 0, 0);
    while (got < 0 && errno == EINTR);
    return got < 0 ? -errno : got;
}

/* The confirm, once `answer` is the collector's OSP_FORK_TAKEN: 0 once sent; else negative
 * (EPIPE: the collector gave up on the confirm first). */
static int confirm(long sock, long got, char answer)
{
    if (got != 1 || answer != OSP_FORK_TAKEN)
        return got < 0 ? (int)got : -ECONNREFUSED;
    char byte = OSP_FORK_CONFIRM;
    got = one_byte(sock, &byte, 1);
    return got == 1 ? 0 : got < 0 ? (int)got : -EPIPE;
}

int osp__greeting_answered_by(long sock, uint64_t end_ns)
{
    char answer = 0;
    long got;
    for (;;) {
        got = one_byte(sock, &answer, 0);
        uint64_t now = osp__mono_ns();
        if (got != -EAGAIN || now >= end_ns)
            break;
        struct pollfd ready = {.fd = (int)sock, .events = POLLIN};
        struct timespec left = {.tv_sec = (time_t)((end_ns - now) / 1000000000u),
                                .tv_nsec = (long)((end_ns - now) % 1000000000u)};
        osp__sys(SYS_ppoll, (long)&ready, 1, (long)&left, 0, 0);
    }
    return confirm(sock, got, answer);
}

enum { DEFERRED_NONE, DEFERRED_PENDING, DEFERRED_BUSY, DEFERRED_FOLLOWED, DEFERRED_REFUSED };
static _Atomic int deferred_state;
static long deferred_sock = -1;
static uint64_t deferred_dev, deferred_ino, deferred_end_ns;

/* Is deferred_sock still the socket the greeting went on? */
static int deferred_ours(void)
{
    struct stat st;
    return osp__sys(SYS_fstat, deferred_sock, (long)&st, 0, 0, 0) == 0 &&
           (uint64_t)st.st_dev == deferred_dev && (uint64_t)st.st_ino == deferred_ino;
}

int osp__greeting_defer(long sock)
{
    struct stat st;
    if (osp__sys(SYS_fstat, sock, (long)&st, 0, 0, 0) != 0)
        return -errno;
    deferred_sock = sock;
    deferred_dev = (uint64_t)st.st_dev;
    deferred_ino = (uint64_t)st.st_ino;
    deferred_end_ns = osp__mono_ns() + OSP__GREETING_ANSWER_MS * 1000000ull;
    /* Release: a handler that sees PENDING sees the socket above. */
    atomic_store_explicit(&deferred_state, DEFERRED_PENDING, memory_order_release);
    return 0;
}

/* One look at the deferred greeting, claimed PENDING -> BUSY (else its state, as found).
 * `wait` > 0: its answer waited for up to the end of its OSP__GREETING_ANSWER_MS (none by
 * then: given up); 0: looked at without waiting (none yet: still PENDING); < 0: given up at
 * once. The confirm once answered; the socket closed once settled. Async-signal-safe with
 * `wait` 0. */
static int deferred_look(int wait)
{
    int found = DEFERRED_PENDING;
    /* Acquire: pairs with osp__greeting_defer's and a previous look's release. */
    if (!atomic_compare_exchange_strong_explicit(&deferred_state, &found, DEFERRED_BUSY,
                                                 memory_order_acquire, memory_order_relaxed))
        return found;
    int state = DEFERRED_REFUSED;
    if (wait >= 0 && deferred_ours()) {
        char answer = 0;
        long got = one_byte(deferred_sock, &answer, 0);
        int err;
        if (got == -EAGAIN && wait == 0) {
            state = DEFERRED_PENDING;
        } else {
            err = got == -EAGAIN ? osp__greeting_answered_by(deferred_sock, deferred_end_ns)
                                 : confirm(deferred_sock, got, answer);
            state = err == 0 ? DEFERRED_FOLLOWED : DEFERRED_REFUSED;
        }
    }
    if (state != DEFERRED_PENDING && deferred_ours())
        osp__sys(SYS_close, deferred_sock, 0, 0, 0, 0);
    atomic_store_explicit(&deferred_state, state, memory_order_release);
    return state;
}

int osp__greeting_pending(void)
{
    /* Relaxed: a hint; whoever settles it claims it with acquire. */
    return atomic_load_explicit(&deferred_state, memory_order_relaxed) == DEFERRED_PENDING;
}

void osp__greeting_poll(void)
{
    /* Relaxed: a hint; the look claims it with acquire. */
    if (atomic_load_explicit(&deferred_state, memory_order_relaxed) == DEFERRED_PENDING)
        (void)deferred_look(0);
}

int osp__greeting_settle(int wait)
{
    int state;
    /* A handler on another thread holds it for a few system calls: let it finish. */
    while ((state = deferred_look(wait == 0 ? 1 : wait)) == DEFERRED_BUSY)
        osp__nap_us(100);
    atomic_store_explicit(&deferred_state, DEFERRED_NONE, memory_order_relaxed);
    return state == DEFERRED_NONE ? 1 : state == DEFERRED_FOLLOWED ? 0 : -ECONNREFUSED;
}

void osp__greeting_forget(void)
{
    int state = atomic_load_explicit(&deferred_state, memory_order_relaxed);
    if ((state == DEFERRED_PENDING || state == DEFERRED_BUSY) && deferred_ours())
        osp__sys(SYS_close, deferred_sock, 0, 0, 0, 0);
    atomic_store_explicit(&deferred_state, DEFERRED_NONE, memory_order_relaxed);
}
