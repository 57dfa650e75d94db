/* forks.c — forked children of the target: the socket they greet, and their collectors.
 *
 * Owns the listening socket the shim bound (abstract: nothing in the file system, gone with
 * the last process holding it) under OSP_FORKS_SOCKET + the target ring's name and handed
 * over with its ring (`--forks-fd N`), and the connections made to it: each peer's
 * credentials checked at accept, before anything is read (another user's is closed unread:
 * anyone can find the name in /proc/net/unix and connect), every connection non-blocking, its
 * greeting read when it comes (watched on the loop, with a deadline; a bounded number at once,
 * a bounded number accepted per round of the loop), so that a silent or slow peer costs the
 * tick nothing. Each greeting is checked (its size, magic and ABI, the pid it names against
 * the peer's, its descriptors: one ring and the switch events it counts, its names) and, for
 * each child, a collector of its own started: this executable again, `--ring-fd 3
 * --ring-name NAME --out PATH --switch-fd 4 ... --forks-fd M` (proto/osp_daemon_args.h), the
 * descriptors placed at 3, 4.. and M, in a process group of its own. A greeting that fails a check
 * is dropped with its descriptors (the child's profile is lost, one line says so).
 *
 * A later image (exec'd or spawned by a profiled process: a ring without OSP_RING_FORKED)
 * greets the same way instead of starting a collector itself, and always gets one; after the
 * target exec'd, the socket stays open (bounded) for its next image's greeting when the
 * environment it was handed names this socket.
 *
 * A greeting is an exchange (exchange()): checked, it is answered OSP_FORK_TAKEN; the greeter
 * confirms (OSP_FORK_CONFIRM) and only then is it followed. EOF instead drops it: the greeter
 * had no answer in time and starts its own collector. A confirm not come in time ends with
 * shutdown(SHUT_RD) and a last read (exchange_end), so that both sides agree.
 *
 * DESIGN. One collector per process, as for an exec'd image: a collector knows one ring, one
 * pid, one raw file, and everything it does (liveness, waits, asks) is per process. The
 * child pays for a ring and one message (no process start, no exec, tens of microseconds);
 * the collector's start (exec, dynamic linking) runs here, off the program's threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "osp_daemon_args.h"
#include "osp_ring.h"
#include "ospd.h"
#include "ospd_follow.h"
#include "ospd_forks.h"
#include "ospd_switch.h"
#include "ospd_target.h"

extern char **environ;

#define FIRST_HIGH_FD 300 /* above every place a descriptor is moved to (3 + 1 + 256) */
/* A greeting waits this long before its collector starts: a fork that execs or ends at once
 * (a shell's before exec, a daemon's double fork) has then done so, with no sample, and costs
 * no collector. What a child samples meanwhile waits in its rings. */
#define SETTLE_MS 3
/* A child connects first and sends its greeting once its ring is made (a millisecond or two,
 * more on a loaded machine): one that has not come in this long will not (a process stopped
 * or killed between the two). */
#define GREETING_MS 1000
/* At the end, what a connection just accepted still waits for its greeting: a child connects
 * first and makes its ring, then greets (more than 20 ms at load 30 on 2 cores, a daemon's
 * grandchild whose program ended at once). */
#define GREETING_END_MS 250
/* At the end, what a greeting answered still waits for its confirm. A forked child confirms
 * at its first sample, its first guarded wait, its exec or its exit (shim/README.md, "The
 * collector's answer"), not at the fork: a millisecond of its CPU, more when it waits for a
 * CPU on a loaded machine (a daemon's grandchild, whose middle process ended the run,
 * confirmed after more than 20 ms in 1 run of 7 at load 6 on 2 cores, after more than 100 ms
 * at load 30). As long as the confirm has while the collector runs: a child that confirms
 * ends the wait at once, and only one that neither samples, waits nor ends costs it all. */
#define CONFIRM_END_MS GREETING_MS

/* A greeting taken, its collector not started yet. */
struct pending {
    uv_timer_t timer;
    struct ospd_forks *forks;
    struct pending *next;
    struct osp_fork_hello hello;
    int fds[3 + OSP_MAX_SWITCH_FDS];
    int n;
    struct ospd_switch_hold hold; /* a later image's switch events, mapped while it lives */
};

static void refuse(struct ospd_forks *f, const char *why)
{
    if (f->refused++ < 3)
        fprintf(stderr,
                "osprey: ospreyd: a forked child's greeting was refused (%s); that "
                "process is not profiled\n",
                why);
}

static void close_all(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

static bool ring_forked(int ring);

/* Start the child's collector with `fds` (the ring, the switch events, its socket). */
static int start_collector(struct ospd_forks *f, const struct osp_fork_hello *hello, const int *fds,
                           int n, struct ospd_switch_hold *hold)
{
    /* A later image is followed here, in this process and loop (follow.c), unless it follows
     * its most already. A forked child has a collector process of its own, as before: most of
     * those followed here had ended by the time they settled, and mapping an ended process's
     * switch events waits 15-23 ms in the kernel with the process's memory map locked, which
     * stalled every other image's session (1 fork in 10 took 12 ms or more to reap). */
    int followed = ring_forked(fds[0]) ? -EBUSY
                                       : ospd_follow(f->loop, hello, fds, n, hold, f->self,
                                                     f->export_formats, f->run_lock);
    if (followed != -EBUSY) {
        if (followed == 0)
            f->started++;
        return followed;
    }
    int high[3 + OSP_MAX_SWITCH_FDS];
    int moved = 0, err = 0;
    for (; moved < n; moved++) {
        high[moved] = fcntl(fds[moved], F_DUPFD_CLOEXEC, FIRST_HIGH_FD);
        if (high[moved] < 0) {
            err = errno;
            break;
        }
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    for (int i = 0; err == 0 && i < n; i++)
        err = posix_spawn_file_actions_adddup2(&actions, high[i], 3 + i);
    /* The run's lock after them: held by the new collector before this one can end. */
    int lock_high = f->run_lock >= 0 ? fcntl(f->run_lock, F_DUPFD_CLOEXEC, FIRST_HIGH_FD) : -1;
    if (err == 0 && lock_high >= 0)
        err = posix_spawn_file_actions_adddup2(&actions, lock_high, 3 + n);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    /* A process group of its own, in the program's session: its scheduling group where the
     * kernel groups by session (README.md, "Scheduling"). */
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    /* As the greeting laid them out (ring, switch events, socket, tables), then the lock. */
    struct osp_daemon_fds at = {.ring = 3, .forks = -1, .unwind = -1, .run_lock = -1};
    int next = 4;
    for (; at.switch_count < (int)hello->switch_fds; at.switch_count++)
        at.switches[at.switch_count] = next++;
    if (hello->listener)
        at.forks = next++;
    if (hello->unwind)
        at.unwind = next++;
    if (lock_high >= 0)
        at.run_lock = 3 + n;
    static struct osp_daemon_args args; /* the loop's thread only */
    osp_daemon_args_build(&args, &at, hello->ring_name, hello->out_path, false, f->export_formats);
    char **argv = args.argv;
    /* The new collector starts (exec, the C library's start) at the program's nice value, as
     * one the shim starts does, not at this one's (10 below the program's where allowed,
     * ring-source.c): each image's would take a core from the program on a busy machine. It
     * sets its own once it runs. Back to ours after: allowed, as lowering it was. */
    errno = 0;
    int own = getpriority(PRIO_PROCESS, 0);
    int program = ospd_target_nice(hello->pid);
    bool lowered = errno == 0 && program > own && setpriority(PRIO_PROCESS, 0, program) == 0;
    pid_t pid = -1;
    if (err == 0)
        err = posix_spawn(&pid, f->self, &actions, &attr, argv, environ);
    if (lowered)
        setpriority(PRIO_PROCESS, 0, own);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    close_all(high, moved);
    if (lock_high >= 0)
        close(lock_high);
    if (err != 0)
        return -err;
    f->started++;
    if (f->child_count < OSPD_MAX_FORK_COLLECTORS)
        f->children[f->child_count++] = pid;
    return 0;
}

/* Is the child still the image that greeted (alive, the ring in its maps)? */
static bool still_there(const struct osp_fork_hello *hello)
{
    return ospd_target_maps_ring(ospd_proc_pid(hello->pid), hello->ring_name) == 1;
}

/* Did the child record anything (a slot's ring written to)? A later image's ring (exec'd, or
 * spawned: not a forked child's) counts as recorded: its collector writes its raw file whatever
 * it holds, as the one it would have started itself did. */
static bool sampled(int ring)
{
    struct stat st;
    if (fstat(ring, &st) != 0 || (uint64_t)st.st_size < OSP_RING_HEADER_SIZE)
        return false;
    size_t size = (size_t)st.st_size;
    const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_SHARED, ring, 0);
    if (map == MAP_FAILED)
        return true; /* cannot tell: let a collector look */
    struct osp_ring_header h;
    memcpy(&h, map, offsetof(struct osp_ring_header, shim_state));
    bool any = h.magic != OSP_RING_MAGIC ||         /* not ours to judge: a collector says why */
               !(h.ring_flags & OSP_RING_FORKED) || /* a later image's: its raw file, as ever */
               atomic_load_explicit(&((const struct osp_ring_header *)map)->escapes,
                                    memory_order_relaxed) != 0;
    uint64_t stride = osp_slot_stride(h.slot_ring_size);
    uint32_t used = osp_slots_in_use((struct osp_ring_header *)map, h.slot_count);
    for (uint32_t i = 0; !any && i < used && h.slots_offset + (i + 1) * stride <= size; i++) {
        const struct osp_slot *slot =
            osp_slot_at((uint8_t *)map + h.slots_offset, h.slot_ring_size, i);
        any = atomic_load_explicit(&slot->head, memory_order_acquire) != 0;
    }
    munmap((void *)map, size);
    return any;
}

static int take_connections(struct ospd_forks *f, int listener);

/* The greetings queued on `listener` (a child's socket for its own children), taken as ours:
 * a child that went with nothing recorded may have forked first (daemon(): fork, fork again,
 * the middle one exits), and its children are the ones to profile. */
static void adopt_backlog(struct ospd_forks *f, int listener)
{
    fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK);
    /* Its whole backlog (the shim listens with 512), as its name may still be connected to. */
    for (int round = 0; round < 16; round++)
        if (take_connections(f, listener) < OSPD_FORK_ACCEPTS_PER_ROUND)
            break;
}

static void pending_free(uv_handle_t *handle)
{
    free(handle->data);
}

/* The greeting has settled (or ospreyd is ending): start its collector, unless the child
 * went (exec'd, ended) having recorded nothing. */
static void settle(struct pending *p)
{
    struct ospd_forks *f = p->forks;
    for (struct pending **at = &f->pending; *at != NULL; at = &(*at)->next)
        if (*at == p) {
            *at = p->next;
            break;
        }
    if (still_there(&p->hello) || sampled(p->fds[0])) {
        int err = start_collector(f, &p->hello, p->fds, p->n, &p->hold);
        if (err != 0)
            refuse(f, strerror(-err));
    } else {
        f->skipped++;
        if (p->hello.listener)
            adopt_backlog(f, p->fds[1 + p->hello.switch_fds]);
    }
    ospd_switches_release(&p->hold);
    close_all(p->fds, p->n);
    p->timer.data = p;
    uv_close((uv_handle_t *)&p->timer, pending_free);
}

static void on_settled(uv_timer_t *timer)
{
    settle(timer->data);
}

/* Read the greeting of `conn` (non-blocking), from `peer`, already checked as this user.
 * Returns -EAGAIN when nothing has come yet; else 0, with the greeting checked in `*taken`
 * (its collector not started: follow() does, once the greeter confirms) or NULL (refused, or
 * the peer closed: it starts a collector of its own). */
static int take_greeting(struct ospd_forks *f, int conn, const struct ucred *peer,
                         struct pending **taken)
{
    *taken = NULL;
    static struct osp_fork_hello hello;
    static union {
        struct cmsghdr header;
        char bytes[CMSG_SPACE(sizeof(int) * (3 + OSP_MAX_SWITCH_FDS))];
    } control;
    struct iovec iov = {&hello, sizeof hello};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.bytes,
                         .msg_controllen = sizeof control.bytes};
    ssize_t got;
    do
        got = recvmsg(conn, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return -EAGAIN;
    int fds[3 + OSP_MAX_SWITCH_FDS];
    int n = 0;
    for (struct cmsghdr *c = got > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c != NULL;
         c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (n < (int)(3 + OSP_MAX_SWITCH_FDS))
                    fds[n++] = fd;
                else
                    close(fd);
            }
        }
    const char *why = NULL;
    if (got == 0 && n == 0) { /* closed before its greeting: it gave up, and starts its own */
        return 0;
    } else if (got != (ssize_t)sizeof hello || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
        why = "not a greeting";
    else if (hello.magic != OSP_FORK_HELLO_MAGIC || hello.abi_version != OSP_RING_ABI_VERSION)
        why = "another version of the profiler";
    else if (peer->pid != hello.pid)
        why = "sent by another process";
    else if (hello.switch_fds > OSP_MAX_SWITCH_FDS || hello.listener > 1 || hello.unwind > 1 ||
             n != 1 + (int)hello.switch_fds + (int)hello.listener + (int)hello.unwind)
        why = "descriptors missing";
    else if (memchr(hello.ring_name, '\0', sizeof hello.ring_name) == NULL ||
             strncmp(hello.ring_name, "/osprey-", 8) != 0 ||
             memchr(hello.out_path, '\0', sizeof hello.out_path) == NULL ||
             hello.out_path[0] != '/')
        why = "malformed names";
    struct pending *p = why == NULL ? malloc(sizeof *p) : NULL;
    if (why == NULL && (p == NULL || uv_timer_init(f->loop, &p->timer) != 0)) {
        free(p);
        why = "out of memory";
    }
    if (why != NULL) {
        refuse(f, why);
        close_all(fds, n);
        return 0;
    }
    p->forks = f;
    memset(&p->hold, 0, sizeof p->hold);
    p->hello = hello;
    memcpy(p->fds, fds, sizeof(int) * (size_t)n);
    p->n = n;
    p->timer.data = p;
    *taken = p;
    return 0;
}

/* Is `ring` a forked child's (OSP_RING_FORKED)? Else a later image's. */
static bool ring_forked(int ring)
{
    uint32_t flags = 0;
    return pread(ring, &flags, sizeof flags, offsetof(struct osp_ring_header, ring_flags)) !=
               (ssize_t)sizeof flags ||
           (flags & OSP_RING_FORKED) != 0;
}

/* The greeter confirmed: its collector starts, a forked child's once it has settled
 * (SETTLE_MS: it may exec or end at once), a later image's now (it has a profile whatever it
 * does, and an image that execs at once greets that collector next). */
static void follow(struct ospd_forks *f, struct pending *p)
{
    p->next = f->pending;
    f->pending = p;
    if (f->collector != NULL && p->hello.pid == f->collector->pid)
        f->next_image_followed = true; /* the target's next image: next_image waits no more */
    if (ring_forked(p->fds[0]))
        uv_timer_start(&p->timer, on_settled, SETTLE_MS, 0);
    else
        settle(p);
}

/* A greeting answered and not confirmed (the greeter gave up waiting, or went): dropped with
 * its descriptors, and nothing said: the greeter starts a collector of its own. */
static void drop(struct pending *p)
{
    ospd_switches_release(&p->hold);
    close_all(p->fds, p->n);
    uv_close((uv_handle_t *)&p->timer, pending_free);
}

/* One step of the exchange on `conn` (non-blocking; proto/osp_ring.h, "Forked children"):
 * the greeting read and checked, then answered OSP_FORK_TAKEN, then the greeter's
 * OSP_FORK_CONFIRM read, and only then followed; EOF or anything else instead drops it.
 * Returns -EAGAIN while the greeter has yet to send; 0 once the connection is done with. */
static int exchange(struct ospd_forks *f, int conn, const struct ucred *peer,
                    struct pending **taken)
{
    if (*taken == NULL) {
        int err = take_greeting(f, conn, peer, taken);
        if (err != 0 || *taken == NULL)
            return err;
        /* A later image's switch events mapped now, while it waits for the answer (alive, its
         * shim's ring there): its session maps them quickly after (ospd_switch.h). */
        if (!ring_forked((*taken)->fds[0]))
            ospd_switches_hold(&(*taken)->hold, (*taken)->fds + 1, (int)(*taken)->hello.switch_fds);
        char answer = OSP_FORK_TAKEN;
        if (send(conn, &answer, 1, MSG_DONTWAIT | MSG_NOSIGNAL) != 1) {
            drop(*taken); /* gone already, or a full queue from a greeter that sends twice */
            *taken = NULL;
            return 0;
        }
    }
    char confirm = 0;
    ssize_t got;
    do
        got = recv(conn, &confirm, 1, MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return -EAGAIN;
    if (got == 1 && confirm == OSP_FORK_CONFIRM)
        follow(f, *taken);
    else
        drop(*taken);
    *taken = NULL;
    return 0;
}

/* The end of an exchange not finished in time: no more from the greeter (shutdown(SHUT_RD),
 * after which its send fails with EPIPE and it starts its own collector), then what it sent
 * before that taken: the two sides never disagree on who follows it. */
static void exchange_end(struct ospd_forks *f, int conn, const struct ucred *peer,
                         struct pending **taken)
{
    shutdown(conn, SHUT_RD);
    if (*taken != NULL && exchange(f, conn, peer, taken) == -EAGAIN) {
        drop(*taken);
        *taken = NULL;
    }
}

/* A connection whose exchange has not ended: watched on the loop until it ends or its
 * deadline passes (GREETING_MS for the greeting, then as long again for the confirm), never
 * waited for. */
struct connection {
    uv_poll_t poll;
    uv_timer_t deadline;
    struct ospd_forks *forks;
    struct connection *next;
    struct ucred peer;
    struct pending *taken; /* the greeting, answered: its confirm awaited */
    int fd;
    int open_handles; /* freed once both handles are closed */
};

static void connection_free(uv_handle_t *handle)
{
    struct connection *c = handle->data;
    if (--c->open_handles == 0)
        free(c);
}

/* Done with `c`: an exchange not finished ends here (exchange_end). */
static void connection_end(struct connection *c)
{
    struct ospd_forks *f = c->forks;
    if (c->taken != NULL)
        exchange_end(f, c->fd, &c->peer, &c->taken);
    for (struct connection **at = &f->connections; *at != NULL; at = &(*at)->next)
        if (*at == c) {
            *at = c->next;
            break;
        }
    f->connection_count--;
    uv_poll_stop(&c->poll); /* out of the poll set before the descriptor goes */
    uv_timer_stop(&c->deadline);
    uv_close((uv_handle_t *)&c->poll, connection_free);
    uv_close((uv_handle_t *)&c->deadline, connection_free);
    close(c->fd);
}

static void on_deadline(uv_timer_t *timer);

static void on_greeting(uv_poll_t *poll, int status, int events)
{
    (void)events;
    struct connection *c = poll->data;
    bool greeted = c->taken != NULL;
    if (status == 0 && exchange(c->forks, c->fd, &c->peer, &c->taken) == -EAGAIN) {
        if (!greeted && c->taken != NULL) /* answered: the confirm has as long */
            uv_timer_start(&c->deadline, on_deadline, GREETING_MS, 0);
        return;
    }
    if (status != 0)
        exchange_end(c->forks, c->fd, &c->peer, &c->taken);
    connection_end(c);
}

static void on_deadline(uv_timer_t *timer)
{
    struct connection *c = timer->data;
    exchange_end(c->forks, c->fd, &c->peer, &c->taken);
    connection_end(c);
}

/* Watch `conn` until its exchange ends (`taken`: its greeting answered already). Returns 0,
 * or -errno (`conn` and `taken` are then the caller's). */
static int connection_watch(struct ospd_forks *f, int conn, const struct ucred *peer,
                            struct pending *taken)
{
    if (f->connection_count >= OSPD_MAX_FORK_CONNECTIONS)
        return -EMFILE;
    struct connection *c = calloc(1, sizeof *c);
    if (c == NULL)
        return -ENOMEM;
    if (uv_poll_init(f->loop, &c->poll, conn) != 0) {
        free(c);
        return -ENOMEM;
    }
    uv_timer_init(f->loop, &c->deadline);
    c->forks = f;
    c->peer = *peer;
    c->taken = taken;
    c->fd = conn;
    c->open_handles = 2;
    c->poll.data = c;
    c->deadline.data = c;
    c->next = f->connections;
    f->connections = c;
    f->connection_count++;
    uv_poll_start(&c->poll, UV_READABLE, on_greeting);
    uv_timer_start(&c->deadline, on_deadline, GREETING_MS, 0);
    return 0;
}

/* A connection of another user's, closed unread: when the peer is the target's own child (it
 * changed its user; it connects and sends nothing, README.md "Forked children"), it is named
 * in the profile as a process that ran unprofiled. Anyone else is no business of ours. */
static void name_stranger(struct ospd_forks *f, const struct ucred *peer)
{
    int32_t shown = ospd_proc_pid(peer->pid); /* the number /proc gives it (proc-view.c) */
    if (f->collector == NULL || f->collector->proc_pid <= 0 || shown <= 0 ||
        ospd_target_parent(shown) != f->collector->proc_pid)
        return;
    char link[64], exe[OSP_MAX_PATH + 1];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)shown);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    char *path = ospd_utf8_sanitize(exe, n > 0 ? (size_t)n : 0);
    if (path != NULL)
        ospd_collector_escaped(f->collector, peer->pid, OSPD_ESCAPE_OTHER_USER, path);
}

/* Accept what `listener` holds, at most OSPD_FORK_ACCEPTS_PER_ROUND (a flood of connections
 * waits for the loop's next round, behind the tick); returns how many it accepted. Each peer is
 * checked before anything is read: another user's connection is closed at once, unread (README.md,
 * "Forked children"). A greeting not there yet is watched on the loop, never waited for. */
static int take_connections(struct ospd_forks *f, int listener)
{
    int i = 0;
    for (; i < OSPD_FORK_ACCEPTS_PER_ROUND; i++) {
        int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (conn < 0)
            break;
        struct ucred peer;
        socklen_t peer_size = sizeof peer;
        if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) != 0 ||
            peer_size != sizeof peer) {
            refuse(f, "no credentials");
            close(conn);
            continue;
        }
        if (peer.uid != getuid()) {
            f->strangers++;
            name_stranger(f, &peer);
            close(conn);
            continue;
        }
        struct pending *taken = NULL;
        int err = exchange(f, conn, &peer, &taken);
        if (err == -EAGAIN)
            err = connection_watch(f, conn, &peer, taken);
        else
            err = -EALREADY; /* followed, refused or dropped */
        if (err == 0)
            continue; /* the loop has it now */
        if (taken != NULL)
            exchange_end(f, conn, &peer, &taken);
        if (err == -EMFILE)
            refuse(f, "too many greetings at once");
        else if (err != -EALREADY)
            refuse(f, strerror(-err));
        close(conn);
    }
    return i;
}

static void on_connection(uv_poll_t *poll, int status, int events)
{
    (void)status;
    (void)events;
    struct ospd_forks *f = poll->data;
    take_connections(f, f->fd);
    ospd_forks_reap(f);
}

int ospd_forks_adopt(struct ospd_forks *f, uv_loop_t *loop, int fd, const char *self,
                     const char *export_formats, int run_lock, struct ospd_collector *collector)
{
    memset(f, 0, sizeof *f);
    f->collector = collector;
    f->fd = -1;
    f->run_lock = run_lock;
    f->self = self;
    f->export_formats = export_formats;
    f->children = calloc(OSPD_MAX_FORK_COLLECTORS, sizeof *f->children);
    if (f->children == NULL || uv_poll_init(loop, &f->poll, fd) != 0) {
        free(f->children);
        f->children = NULL;
        close(fd);
        return -ENOMEM;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    f->fd = fd;
    f->loop = loop;
    f->poll.data = f;
    uv_poll_start(&f->poll, UV_READABLE, on_connection);
    take_connections(f, fd); /* greeters queued while this collector started wait for it */
    return 0;
}

void ospd_forks_reap(struct ospd_forks *f)
{
    for (uint32_t i = 0; i < f->child_count;) {
        if (waitpid(f->children[i], NULL, WNOHANG) != 0)
            f->children[i] = f->children[--f->child_count];
        else
            i++;
    }
}

/* The ring whose socket `f` listens on (its abstract name after OSP_FORKS_SOCKET), in `ring`;
 * false when it cannot be told. */
static bool listener_ring(const struct ospd_forks *f, char ring[OSP_RING_NAME_SIZE])
{
    struct sockaddr_un addr;
    socklen_t length = sizeof addr;
    size_t prefix = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(OSP_FORKS_SOCKET);
    if (getsockname(f->fd, (struct sockaddr *)&addr, &length) != 0 || length <= prefix ||
        length - prefix >= OSP_RING_NAME_SIZE ||
        memcmp(addr.sun_path + 1, OSP_FORKS_SOCKET, strlen(OSP_FORKS_SOCKET)) != 0)
        return false;
    memcpy(ring, addr.sun_path + 1 + strlen(OSP_FORKS_SOCKET), length - prefix);
    ring[length - prefix] = '\0';
    return true;
}

/* Will the target's next image greet us (the environment it was handed by exec names this
 * socket in OSPREY_PROFILE_GREET, shim/descendants.c)? Read where the kernel put it: the shim
 * takes the entry out of the program's view, not out of that memory. A process of another
 * user's or group's now (a setuid or setgid image: /proc/PID is then root's) will not. 1 or
 * 0; -1 while the exec has not laid the environment out yet (nothing to read). `shown`: the
 * number /proc gives the process (ospd_proc_pid). */
static int next_image_greets(int32_t shown, const char *ring)
{
    char want[48 + OSP_RING_NAME_SIZE];
    int n = snprintf(want, sizeof want, "OSPREY_PROFILE_GREET=%u:%s", (unsigned)getuid(), ring);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", (int)shown);
    struct stat st;
    if (n <= 0 || (size_t)n >= sizeof want || shown <= 0 || stat(path, &st) != 0 ||
        st.st_uid != getuid() || st.st_gid != getgid())
        return 0;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)shown);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    static char env[65536]; /* the loop's thread only; an entry past it is not looked for */
    ssize_t got = read(fd, env, sizeof env);
    close(fd);
    for (ssize_t at = 0; got > 0 && at < got;) {
        const char *entry = env + at;
        size_t len = strnlen(entry, (size_t)(got - at));
        if (len == (size_t)n && memcmp(entry, want, len) == 0)
            return 1;
        at += (ssize_t)len + 1;
    }
    return got == 0 ? -1 : 0;
}

/* Whether the process /proc gives the number proc_pid (ospd_proc_pid) runs; 0: /proc shows
 * none, it is taken for running. */
static bool alive(int32_t proc_pid)
{
    int status;
    char state = proc_pid > 0 ? ospd_target_state(proc_pid, &status) : 'R';
    return state != 0 && state != 'Z' && state != 'X';
}

/* The pending greeting of `pid`, or NULL. */
static struct pending *pending_of(struct ospd_forks *f, pid_t pid)
{
    for (struct pending *p = f->pending; p != NULL; p = p->next)
        if (p->hello.pid == pid)
            return p;
    return NULL;
}

/* The target exec'd (alive, our ring gone from its maps) and its next image is to greet this
 * collector (next_image_greets): wait for that greeting, while the process lives, up to
 * GREETING_MS, and start its collector at once, so that the image need not start one of its
 * own. Else nothing. Once. */
static void next_image(struct ospd_forks *f)
{
    pid_t pid = f->collector != NULL ? f->collector->pid : 0;
    char ring[OSP_RING_NAME_SIZE];
    if (f->next_image_done || f->fd < 0)
        return;
    f->next_image_done = true;
    int32_t shown = pid > 0 ? f->collector->proc_pid : 0;
    if (pid <= 0 || !alive(shown) || !listener_ring(f, ring) ||
        ospd_target_maps_ring(shown, ring) != 0)
        return;
    uint64_t end_ns = uv_hrtime() + GREETING_MS * 1000000ull;
    int greets;
    while ((greets = next_image_greets(shown, ring)) < 0 && uv_hrtime() < end_ns && alive(shown))
        poll(NULL, 0, 1);
    while (greets == 1 && !f->next_image_followed && uv_hrtime() < end_ns && alive(shown)) {
        take_connections(f, f->fd); /* a greeting there already is taken */
        struct pollfd ready[2] = {{.fd = f->fd, .events = POLLIN}, {.fd = -1}};
        for (struct connection *c = f->connections; c != NULL; c = c->next)
            if (c->peer.pid == pid) {
                if (exchange(f, c->fd, &c->peer, &c->taken) != -EAGAIN) {
                    connection_end(c);
                    break;
                }
                ready[1] = (struct pollfd){.fd = c->fd, .events = POLLIN};
                break;
            }
        if (!f->next_image_followed)
            poll(ready, 2, 5);
    }
    struct pending *p = pending_of(f, pid);
    if (p != NULL) {
        uv_timer_stop(&p->timer);
        settle(p);
    }
}

void ospd_forks_next_image(struct ospd_forks *f)
{
    next_image(f);
}

void ospd_forks_close(struct ospd_forks *f)
{
    if (f->fd < 0)
        return;
    next_image(f);
    /* Stopped, the descriptor is out of libuv's poll set and may go. */
    uv_poll_stop(&f->poll);
    uv_close((uv_handle_t *)&f->poll, NULL);
    while (take_connections(f, f->fd) == OSPD_FORK_ACCEPTS_PER_ROUND) /* queued, not taken */
        ;
    close(f->fd);
    f->fd = -1;
    /* An exchange under way is waited for briefly, all of them together, now that the loop
     * ends (then ended: exchange_end): a greeting GREETING_END_MS, a confirm CONFIRM_END_MS;
     * a settled child's backlog may add more of both. */
    uint64_t start_ns = uv_hrtime();
    uint64_t greeting_end_ns = start_ns + GREETING_END_MS * 1000000ull;
    uint64_t confirm_end_ns = start_ns + CONFIRM_END_MS * 1000000ull;
    while (f->connections != NULL || f->pending != NULL) {
        if (f->pending != NULL) { /* now rather than never */
            uv_timer_stop(&f->pending->timer);
            settle(f->pending);
            continue;
        }
        struct connection *c = f->connections;
        uint64_t now = uv_hrtime();
        uint64_t end_ns = c->taken != NULL ? confirm_end_ns : greeting_end_ns;
        struct pollfd ready = {.fd = c->fd, .events = POLLIN};
        if (now < end_ns && poll(&ready, 1, (int)((end_ns - now) / 1000000u) + 1) > 0 &&
            exchange(f, c->fd, &c->peer, &c->taken) == -EAGAIN)
            continue; /* answered: the confirm next */
        connection_end(c);
    }
    ospd_forks_reap(f);
    free(f->children); /* those not reaped yet go to init */
    f->children = NULL;
    f->child_count = 0;
}
