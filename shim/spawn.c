/* spawn.c — a collector for this image: ospreyd started, or a parent's greeted.
 *
 * Owns locating ospreyd ($OSPREY_DAEMON, beside the shim in a build tree, the install path),
 * starting it detached with the image's descriptors (a vfork'd child that forks once more and
 * execs; never the program's child), the socket an image's forked children greet its
 * collector on, and a forked child's greeting, which hands its ring to the parent's collector.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dlfcn.h>
#include <link.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_daemon_args.h"

#ifndef OSPREY_INSTALL_DAEMON
#define OSPREY_INSTALL_DAEMON "/usr/local/bin/ospreyd"
#endif
/* Descriptors handed to ospreyd: the ring, the switch events, the forks' socket, the tables. */
#define OSP__SPAWN_FDS (4 + OSP_MAX_SWITCH_FDS)

extern char **environ;

int osp__daemon_spawned;
long osp__daemon_spawned_pid;

static int executable(const char *path)
{
    return access(path, X_OK) == 0;
}

/* Where ospreyd is: $OSPREY_DAEMON; beside the shim (<dir>/../daemon/ospreyd, the build
 * tree); the install path. */
static int find_daemon(const struct osp__boot_env *env, char *out, size_t outsz)
{
    if (env->has_daemon) {
        snprintf(out, outsz, "%s", env->daemon);
        return 0;
    }
    Dl_info info;
    struct link_map *map = NULL;
    char self[PATH_MAX] = "";
    if (dladdr1((void *)osp__spawn_daemon, &info, (void **)&map, RTLD_DL_LINKMAP) != 0) {
        if (map != NULL && map->l_name != NULL && map->l_name[0] != '\0') {
            snprintf(self, sizeof(self), "%s", map->l_name);
        } else {
            ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
            self[n > 0 ? n : 0] = '\0';
        }
    }
    char *slash = strrchr(self, '/');
    if (slash) {
        *slash = '\0';
        snprintf(out, outsz, "%s/../daemon/ospreyd", self);
        if (executable(out))
            return 0;
    }
    snprintf(out, outsz, "%s", OSPREY_INSTALL_DAEMON);
    if (executable(out))
        return 0;
    return -ENOENT;
}

/* The program's environment without LD_PRELOAD and OSPREY_*: ospreyd is not profiled. */
static char **daemon_environment(void)
{
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = calloc(n + 1, sizeof(*env));
    if (env == NULL)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "LD_PRELOAD=", 11) == 0 || strncmp(*e, "OSPREY_", 7) == 0)
            continue;
        env[k++] = *e;
    }
    env[k] = NULL;
    return env;
}

/* What the spawning child needs, prepared before it runs (it may not allocate). */
struct daemon_spawn {
    const char *path;
    char **argv, **envp;
    const int *fds; /* handed over as fds 3, 4, ... in this order */
    int count;
    long pid; /* out: the grandchild's, written by the child (it shares our memory) */
};

/* Runs in a vfork child (it shares the program's memory, on a stack of its own): it forks
 * once more with the raw system call (no pthread_atfork handler of the program runs) and
 * exits at once, so the program is held only for two process creations, not for ospreyd's
 * own start (exec, dynamic linking). The grandchild, with a memory of its own,
 * gets /dev/null on 0-2 (a daemon holding the program's pipes open would keep their reader
 * waiting after the program is gone), no other descriptor, default dispositions and an empty
 * mask, and becomes ospreyd, which detaches into a process group of its own (in the program's
 * session). */
static int spawn_child(void *p)
{
    struct daemon_spawn *spawn = p;
    long pid = osp__sys(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid != 0) {
        spawn->pid = pid;
        osp__sys(SYS_exit, pid < 0 ? 127 : 0, 0, 0, 0, 0);
    }
    /* The ring becomes fd 3, the switch events 4.., then the forks' socket and the tables'
     * memfd (without close-on-exec), before 0-2 are replaced: first each is moved above where
     * any of them lands, so that no move overwrites another. */
    long moved[OSP__SPAWN_FDS];
    int count = spawn->count;
    for (int i = 0; i < count; i++)
        moved[i] = osp__sys(SYS_fcntl, spawn->fds[i], F_DUPFD, 3 + OSP__SPAWN_FDS, 0, 0);
    for (int i = 0; i < count; i++)
        if (moved[i] >= 0)
            osp__sys(SYS_dup3, moved[i], 3 + i, 0, 0, 0); /* not close-on-exec */
        else
            osp__sys(SYS_close, 3 + i, 0, 0, 0, 0);
    long first_closed = 3 + count;
    long null = osp__sys(SYS_openat, AT_FDCWD, (long)"/dev/null", O_RDWR, 0, 0);
    for (long fd = 0; null >= 0 && fd <= 2; fd++)
        if (fd != null)
            osp__sys(SYS_dup3, null, fd, 0, 0, 0);
    if (osp__sys(SYS_close_range, first_closed, ~0u, 0, 0, 0) != 0)
        for (long fd = first_closed; fd < 1024; fd++)
            osp__sys(SYS_close, fd, 0, 0, 0, 0);
    for (int sig = 1; sig < 65; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            osp__signal_default_raw(sig);
    uint64_t empty = 0;
    osp__sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&empty, 0, 8, 0);
    osp__sys(SYS_execve, (long)spawn->path, (long)spawn->argv, (long)spawn->envp, 0, 0);
    osp__sys(SYS_exit, 127, 0, 0, 0, 0);
    return 127;
}

/* Start ospreyd --ring-fd 3 --ring-name NAME --out PATH --detached (and the other descriptors,
 * proto/osp_daemon_args.h) from a grandchild (spawn_child) and reap the short-lived child right
 * away, so the daemon is never the program's child. Does not wait for the daemon. */
int osp__spawn_daemon(const struct osp__boot_env *env)
{
    char daemon[PATH_MAX];
    if (find_daemon(env, daemon, sizeof(daemon)) != 0) {
        osp__warn("cannot find ospreyd (set OSPREY_DAEMON); no profile will be written to %s",
                  osp__out_path);
        return -ENOENT;
    }
    if (access(daemon, X_OK) != 0) {
        int err = errno;
        osp__warn("cannot start %s: %s; no profile will be written to %s", daemon, strerror(err),
                  osp__out_path);
        return -err;
    }
    /* The descriptors at 3 and up, in this order, each named by its role on the command line
     * (proto/osp_daemon_args.h). Static: one collector is started at a time, as with
     * child_stack below, and the program's stack is spared 7 KiB. */
    static struct osp_daemon_fds at;
    static struct osp_daemon_args args;
    int fds[OSP__SPAWN_FDS];
    int count = 0;
    at = (struct osp_daemon_fds){.ring = 3, .forks = -1, .unwind = -1, .run_lock = -1};
    fds[count++] = osp__ring_fd;
    for (int i = 0; i < osp__switch_count; i++) {
        at.switches[at.switch_count++] = 3 + count;
        fds[count++] = osp__switch_fds[i];
    }
    if (osp__forks_fd >= 0) {
        at.forks = 3 + count;
        fds[count++] = osp__forks_fd;
    }
    if (osp__unwind_fd >= 0) {
        at.unwind = 3 + count;
        fds[count++] = osp__unwind_fd;
    }
    if (osp__run_lock_fd >= 0) {
        at.run_lock = 3 + count;
        fds[count++] = osp__run_lock_fd;
    }
    osp_daemon_args_build(&args, &at, osp__shm_name, osp__out_path, true,
                          env->has_export ? env->export_formats : NULL);
    char **argv = args.argv;
    char **envp = daemon_environment();
    if (envp == NULL)
        return -ENOMEM;
    struct daemon_spawn spawn = {daemon, argv, envp, fds, count, 0};
    /* No signal may run a handler of the program's in the child, which shares its memory. */
    sigset_t all, old;
    sigfillset(&all);
    osp__sigmask_raw(SIG_SETMASK, &all, &old);
    static char child_stack[16384] __attribute__((aligned(16)));
    pid_t pid = clone(spawn_child, child_stack + sizeof child_stack,
                      CLONE_VM | CLONE_VFORK | SIGCHLD, &spawn);
    int err = pid < 0 ? errno : 0;
    int status = 0;
    /* The child has exited by now (CLONE_VFORK): reap exactly it. */
    while (pid > 0 && waitpid(pid, &status, __WALL) < 0 && errno == EINTR)
        ;
    osp__sigmask_raw(SIG_SETMASK, &old, NULL);
    free(envp);
    if (err || (WIFEXITED(status) && WEXITSTATUS(status) != 0)) {
        osp__warn("cannot start %s: %s; no profile will be written to %s", daemon,
                  strerror(err ? err : EAGAIN), osp__out_path);
        return err ? -err : -EAGAIN;
    }
    osp__daemon_spawned_pid = spawn.pid;
    return 0;
}

/* The abstract address forked children of the image whose ring is `ring` greet. */
static socklen_t forks_address(struct sockaddr_un *addr, const char *ring)
{
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    int n = snprintf(addr->sun_path + 1, sizeof addr->sun_path - 1, "%s%s", OSP_FORKS_SOCKET, ring);
    if (n < 0 || (size_t)n >= sizeof addr->sun_path - 1)
        return 0;
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Bind and listen on this image's socket for its forked children, before its collector
 * starts (which takes it over). Without it, children start collectors of their own. */
void osp__forks_listen(void)
{
    struct sockaddr_un addr;
    socklen_t length = forks_address(&addr, osp__shm_name);
    if (osp__forbidden & OSP__FORBIDS_SOCKETS)
        return;
    long sock = length == 0 ? -1
                            : osp__sys(SYS_socket, AF_UNIX,
                                       SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, 0, 0);
    if (sock < 0)
        return;
    if (osp__sys(SYS_bind, sock, (long)&addr, length, 0, 0) != 0 ||
        osp__sys(SYS_listen, sock, 512, 0, 0, 0) != 0) {
        osp__sys(SYS_close, sock, 0, 0, 0, 0);
        return;
    }
    osp__forks_fd = (int)sock;
}

/* The socket a forked child greets its parent's collector with, connected: made first of all
 * its descriptors, so that a low descriptor limit (RLIMIT_NOFILE) takes the optional ones (the
 * switch events, its own children's socket), not the one every other needs to reach a
 * collector. A descriptor; -EPERM when the listener is another user's (below); else -errno
 * (no collector listening, or its queue full: the child starts one itself). Raw system
 * calls: neither the program's interposers nor our guards see them. */
long osp__greeting_connect(const char *parent_ring)
{
    struct sockaddr_un addr;
    socklen_t length = forks_address(&addr, parent_ring);
    if (length == 0)
        return -ENAMETOOLONG;
    if (osp__forbidden & OSP__FORBIDS_SOCKETS)
        return -ECONNREFUSED; /* a filter kills it: as when no collector listens */
    long sock =
        osp__sys(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, 0, 0);
    if (sock < 0)
        return -errno;
    /* Non-blocking: a collector whose queue is full is as good as gone (EAGAIN). */
    int err = 0;
    if (osp__sys(SYS_connect, sock, (long)&addr, length, 0, 0) != 0)
        err = -errno;
    /* The ring and the events go to a listener of this user's only. One of another user's is
     * the parent's collector when this process changed its user since (a worker that dropped
     * its privileges, then forked): the connection alone, with nothing sent, tells it so
     * (daemon/README.md, "Forked children"), and the child is not profiled. */
    struct ucred peer;
    socklen_t peer_size = sizeof peer;
    if (err == 0 &&
        osp__sys(SYS_getsockopt, sock, SOL_SOCKET, SO_PEERCRED, (long)&peer, (long)&peer_size) != 0)
        err = -errno;
    if (err == 0 && peer.uid != getuid())
        err = -EPERM;
    if (err != 0) {
        osp__sys(SYS_close, sock, 0, 0, 0, 0);
        return err;
    }
    return sock;
}

/* The collector's answer, waited for up to OSP__GREETING_ANSWER_MS, and the confirm
 * (osp__greeting_answered_by). */
static int greeting_answered(long sock)
{
    return osp__greeting_answered_by(sock, osp__mono_ns() + OSP__GREETING_ANSWER_MS * 1000000ull);
}

/* A forked child, or a later image, greets a collector (see "Forked children" in
 * proto/osp_ring.h): one message on `sock` (osp__greeting_connect's, closed here) with the
 * ring's descriptor and the switch events', then the answer and the confirm
 * (greeting_answered). 0 once confirmed: the collector follows this process; else it does
 * not, and the caller starts one of its own or says what is lost. */
static int greeting_send(long sock)
{
    int err = 0;
    static struct osp_fork_hello hello; /* static: 4 KiB, and one child boots once */
    memset(&hello, 0, sizeof hello);
    hello.magic = OSP_FORK_HELLO_MAGIC;
    hello.abi_version = OSP_RING_ABI_VERSION;
    hello.pid = (int32_t)getpid();
    hello.switch_fds = (uint32_t)osp__switch_count;
    snprintf(hello.ring_name, sizeof hello.ring_name, "%s", osp__shm_name);
    snprintf(hello.out_path, sizeof hello.out_path, "%s", osp__out_path);
    static union {
        struct cmsghdr header;
        char bytes[CMSG_SPACE(sizeof(int) * (3 + OSP_MAX_SWITCH_FDS))];
    } control;
    int fds[3 + OSP_MAX_SWITCH_FDS];
    int n_fds = 0;
    fds[n_fds++] = osp__ring_fd;
    for (int i = 0; i < osp__switch_count; i++)
        fds[n_fds++] = osp__switch_fds[i];
    if (osp__forks_fd >= 0)
        fds[n_fds++] = osp__forks_fd;
    if (osp__unwind_fd >= 0)
        fds[n_fds++] = osp__unwind_fd;
    hello.listener = osp__forks_fd >= 0;
    hello.unwind = osp__unwind_fd >= 0;
    size_t fd_bytes = sizeof(int) * (size_t)n_fds;
    struct iovec iov = {&hello, sizeof hello};
    struct msghdr msg = {.msg_iov = &iov,
                         .msg_iovlen = 1,
                         .msg_control = control.bytes,
                         .msg_controllen = CMSG_SPACE(fd_bytes)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fd_bytes);
    memcpy(CMSG_DATA(c), fds, fd_bytes);
    if (err == 0 && osp__sys(SYS_sendmsg, sock, (long)&msg, MSG_NOSIGNAL, 0, 0) < 0)
        err = -errno;
    return err;
}

int osp__greet_parent(long sock)
{
    if (sock < 0)
        return (int)sock;
    int err = greeting_send(sock);
    if (err == 0)
        err = greeting_answered(sock);
    osp__sys(SYS_close, sock, 0, 0, 0, 0);
    return err;
}

int osp__greet_deferred(long sock)
{
    if (sock < 0)
        return (int)sock;
    int err = greeting_send(sock);
    if (err == 0)
        err = osp__greeting_defer(sock);
    if (err != 0)
        osp__sys(SYS_close, sock, 0, 0, 0, 0);
    return err;
}

int osp__left_session(void)
{
    pid_t session = getsid(0);
    return osp__boot_session > 0 && session > 0 && session != osp__boot_session;
}

int osp__forked_settle(int wait)
{
    int err = osp__greeting_settle(wait);
    if (err == 1)
        return 1; /* nothing deferred: settled at the start, or not a forked child */
    if (err != 0 && wait < 0) {
        osp__daemon_spawned = 0; /* its next image greets; nothing recorded here is lost */
    } else if (err != 0 && osp__left_session()) {
        osp__warn("process %d left the session (a daemon) and its parent's collector did not "
                  "answer; it is not profiled",
                  (int)getpid());
        osp__daemon_spawned = 0;
    } else if (err != 0) {
        osp__daemon_spawned_pid = 0;
        osp__daemon_spawned = osp__spawn_daemon(&osp__boot_env) == 0;
        osp__greet_set(osp__daemon_spawned && osp__forks_fd >= 0 ? osp__shm_name : NULL);
    }
    osp__handover_close(); /* the ring, the switch events: the collector's now */
    if (!osp__daemon_spawned)
        osp__kernel_waits_off(); /* nobody will read them */
    return err;
}
