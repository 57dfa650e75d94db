/* boot.c — activation and the end of a profiled run.
 *
 * Owns the constructor and the public entry points (osp_prof_boot, osp_prof_active,
 * osp_prof_thread_register, osp_prof_thread_unregister), reading OSPREY_PROFILE /
 * OSPREY_PROFILE_HZ once, the shared memory object and its header, the process's event ring
 * and image table (its registry and state are run.c's, set here), the pthread key that
 * unregisters a thread when it ends, starting ospreyd, the exit handler that publishes the
 * EXIT record and waits (bounded) for ospreyd, and what happens across fork.
 *
 * Off means off: without OSPREY_PROFILE nothing here creates a thread, installs a handler,
 * maps memory or starts a process. When activation fails half-way the shim says so in one
 * line on stderr, undoes what it can, and the program runs on unprofiled.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>
#include <link.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"
#include "osp_handler.h"
#include "osp_policy.h"
#include "osp_unwind.h"
#include "osprey_prof.h"

#ifndef OSPREY_DAEMON_WAIT_MS
#define OSPREY_DAEMON_WAIT_MS 5000
#endif
#ifndef OSPREY_INSTALL_DAEMON
#define OSPREY_INSTALL_DAEMON "/usr/local/bin/ospreyd"
#endif

#define OSP__MAX_SLOTS 16384u
/* The event ring carries thread, image and exit records, and the waits still open at exit;
 * samples go to each thread's own slot ring. */
#define OSP__EVENT_RING_SIZE (1u << 20)
/* Descriptors handed to ospreyd: the ring, the switch events, the forks' socket, the tables. */
#define OSP__SPAWN_FDS (4 + OSP_MAX_SWITCH_FDS)

extern char **environ;

/* The process's registry, whether it is profiled and the pid that booted are run.c's (layer
 * 3), written only here. */
/* The registry is initialised and usable (stays so after exit; cleared in a forked child,
 * whose copy of the registry lock may be held by a thread that does not exist there). */
static _Atomic int registry_ready;
static struct osp_ring_header *ring_header;
static size_t ring_bytes;
static struct osp__event_ring event_ring;
static struct osp__images images;
/* Guards `images`: its scan and emit run on whichever program thread registers, unloads an
 * object or exits. Taken before the registry lock, never while holding it. */
static pthread_mutex_t images_lock = PTHREAD_MUTEX_INITIALIZER;
static char shm_name[OSP_RING_NAME_SIZE]; /* the ring's name (its memfd's, not a file) */
static int ring_fd = -1; /* a forked child's ring (a memfd), until its collector has it */
/* The socket this image's forked children greet, until its collector has it. */
static int forks_fd = -1;
/* The run's lock (OSP_RUN_LOCK beside the profile, when osprey made one), held shared from
 * boot and handed to ospreyd, so that osprey never finds the run over between this image's
 * start and its collector's. */
static int run_lock_fd = -1;
/* This image handed the run's lock to its collector: osprey waits for that collector, so a
 * descendant's exit need not. */
static int run_locked;
static int unwind_fd = -1; /* the tables' memfd, until ospreyd has been handed it */
/* The kernel's context-switch events (switches.c), until ospreyd has been handed them. */
static int switch_fds[OSP_MAX_SWITCH_FDS];
static int switch_count;
static void *unwind_map = MAP_FAILED;
static char out_path[PATH_MAX];
static int daemon_spawned;
static long daemon_spawned_pid; /* the process that became ospreyd (spawn_child), or 0 */
static pthread_once_t boot_once = PTHREAD_ONCE_INIT;
/* Its destructor unregisters a registered thread however it ends: by returning, by
 * pthread_exit or by cancellation alike. */
static pthread_key_t thread_key;
static int thread_key_ready;

static uint64_t unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The environment, read once at boot before anything is set (a program may bring its own
 * getenv/setenv — bash does — so nothing is read after the first setenv). */
struct boot_env {
    char profile[PATH_MAX];
    char hz[32];
    char seconds[32]; /* OSPREY_PROFILE_SECONDS: profile this long, then let the program run */
    char until[32];   /* OSPREY_PROFILE_UNTIL_NS: the same as a CLOCK_MONOTONIC instant */
    char daemon[PATH_MAX];
    char export_formats[256]; /* OSPREY_EXPORT: outputs ospreyd writes beside the raw file */
    long root_pid;            /* OSPREY_PROFILE_ROOT_PID, 0 when unset */
    long last_pid; /* OSPREY_PROFILE_LAST_PID: the latest process image that booted here */
    int has_profile, has_hz, has_daemon, has_export, has_seconds, has_until;
    int forks_off; /* OSPREY_PROFILE_FORKS=0: forked children are not profiled */
};

/* What boot read and decided, kept for a forked child, which boots from the same: the
 * environment (read once), the rate, the user's profile path made absolute, the run's root. */
static struct boot_env boot_env;
static uint32_t boot_rate;
static char profile_absolute[PATH_MAX];
static long run_root_pid;
/* The session this image booted in: a forked child in another (a daemon's double fork) whose
 * parent's collector cannot be reached starts none of its own (boot_forked). */
static pid_t boot_session;

static int copy_env(const char *name, char *out, size_t outsz)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        return 0;
    snprintf(out, outsz, "%s", v);
    return 1;
}

static void read_env(struct boot_env *env)
{
    memset(env, 0, sizeof(*env));
    env->has_profile = copy_env("OSPREY_PROFILE", env->profile, sizeof(env->profile));
    const char *preload = getenv("LD_PRELOAD");
    osp__escape_set_preloaded(preload != NULL && strstr(preload, "libospreyprof") != NULL);
    env->has_hz = copy_env("OSPREY_PROFILE_HZ", env->hz, sizeof(env->hz));
    env->has_seconds = copy_env("OSPREY_PROFILE_SECONDS", env->seconds, sizeof(env->seconds));
    env->has_until = copy_env("OSPREY_PROFILE_UNTIL_NS", env->until, sizeof(env->until));
    env->has_daemon = copy_env("OSPREY_DAEMON", env->daemon, sizeof(env->daemon));
    env->has_export = copy_env("OSPREY_EXPORT", env->export_formats, sizeof(env->export_formats));
    const char *forks = getenv("OSPREY_PROFILE_FORKS");
    env->forks_off = forks != NULL && strcmp(forks, "0") == 0;
    const char *root = getenv("OSPREY_PROFILE_ROOT_PID");
    env->root_pid = root ? atol(root) : 0;
    const char *last = getenv("OSPREY_PROFILE_LAST_PID");
    env->last_pid = last ? atol(last) : 0;
}

/* The raw profile's path: absolute; in a descendant, ".<pid>" goes before the extension; in
 * a process image that replaced a profiled one by exec (same pid), ".<pid>-<random>" — so no
 * profile ever overwrites another. */
static int resolve_out_path(const struct boot_env *env, uint64_t random_bits)
{
    char absolute[PATH_MAX];
    const char *requested = env->profile;
    if (requested[0] == '/') {
        snprintf(absolute, sizeof(absolute), "%s", requested);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return -errno;
        int n = snprintf(absolute, sizeof(absolute), "%s/%s", cwd, requested);
        if (n < 0 || (size_t)n >= sizeof(absolute))
            return -ENAMETOOLONG;
    }
    snprintf(profile_absolute, sizeof profile_absolute, "%s", absolute);
    long pid = (long)getpid();
    int err = 0;
    if (env->last_pid == pid) {
        char extra[16];
        snprintf(extra, sizeof(extra), "%08x", (unsigned)random_bits);
        err = osp_per_pid_path(absolute, pid, extra, out_path, sizeof(out_path));
    } else if (env->root_pid != 0 && env->root_pid != pid) {
        err = osp_per_pid_path(absolute, pid, NULL, out_path, sizeof(out_path));
    } else if (strlen(absolute) >= sizeof(out_path)) {
        err = -ENAMETOOLONG;
    } else {
        strcpy(out_path, absolute);
    }
    if (err)
        return err;
    /* Descendants find these and write beside us. They are kept out of the environment the
     * program sees and added only to what it hands to a new image (preload.c). */
    if (env->root_pid == 0)
        setenv("OSPREY_PROFILE", absolute, 1); /* the user's own variable, made absolute */
    run_root_pid = env->root_pid != 0 ? env->root_pid : pid;
    boot_session = getsid(0);
    osp__bookkeeping_set(run_root_pid, pid);
    unsetenv("OSPREY_PROFILE_ROOT_PID");
    unsetenv("OSPREY_PROFILE_LAST_PID");
    return 0;
}

static uint64_t random64(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        /* No entropy yet (very early boot): mix what differs between processes. */
        r = osp__mono_ns() ^ (unix_ns() << 17) ^ ((uint64_t)getpid() << 40) ^
            (uint64_t)(uintptr_t)&r;
    }
    return r;
}

/* A forked child's slot rings: sixteen times an image's. Its pages are touched only as they
 * are written (the ring is sparse), and a server's forked workers each have a collector of
 * their own, which a loaded machine lets run less often: with 4 KiB, four PostgreSQL backends
 * under pgbench (2 cores) lost 35-75% of their periods to full rings. */
#define OSP__FORK_SLOT_RING (16u * OSP_SLOT_RING_SIZE)

static size_t ring_size(uint32_t slot_ring)
{
    return OSP_RING_HEADER_SIZE + OSP__EVENT_RING_SIZE +
           (size_t)OSP_DEFAULT_SLOTS * osp_slot_stride(slot_ring);
}

/* The header of a ring just mapped, and the event ring's writer on it. */
static void ring_init(void *map, uint32_t rate_hz, uint32_t slot_ring)
{
    ring_header = map;
    osp__event_ring_init_header(ring_header, OSP__EVENT_RING_SIZE, rate_hz, unix_ns(),
                                osp__mono_ns());
    ring_header->slots_offset = OSP_RING_HEADER_SIZE + OSP__EVENT_RING_SIZE;
    ring_header->slot_count = OSP_DEFAULT_SLOTS;
    ring_header->slot_ring_size = slot_ring;
    ring_header->signal_cookie = (uint64_t)(uintptr_t)osp__sigprof_cookie();
    osp__event_ring_attach(&event_ring, ring_header);
}

/* The ring: a memfd (nothing named in /dev/shm, so nothing is left behind however the
 * program or ospreyd ends, and a small /dev/shm — a container's 64 MiB — is no limit), handed
 * to ospreyd by descriptor; shm_name only names it (in the maps, for ospreyd's checks).
 * `reserve`: every page allocated now, so that a memory limit is met here, with one line,
 * rather than when a page is first touched; a descendant's stays sparse (see "Forked
 * children" in proto/osp_ring.h: it touches a few dozen pages, and a process start must be
 * cheap), with slot rings sixteen times larger. */
static int ring_create(uint32_t rate_hz, uint64_t random_bits, int reserve)
{
    snprintf(shm_name, sizeof(shm_name), "/osprey-%d-%016llx", (int)getpid(),
             (unsigned long long)random_bits);
    /* Named as the ring is, so that ospreyd finds it in the process's maps. */
    int fd = (int)osp__sys(SYS_memfd_create, (long)(shm_name + 1), MFD_CLOEXEC, 0, 0, 0);
    if (fd < 0)
        return -errno;
    uint32_t slot_ring = reserve ? OSP_SLOT_RING_SIZE : OSP__FORK_SLOT_RING;
    ring_bytes = ring_size(slot_ring);
    int err = ftruncate(fd, (off_t)ring_bytes) == 0 ? 0 : -errno;
    if (err == 0 && reserve)
        err = -posix_fallocate(fd, 0, (off_t)ring_bytes);
    if (err == -ENOSPC || err == -ENOMEM) {
        osp__warn("cannot reserve %zu KiB of memory for the profiler's ring (%s); profiling is "
                  "off",
                  ring_bytes >> 10, strerror(-err));
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
        return -ECANCELED;
    }
    void *map = MAP_FAILED;
    if (err == 0) {
        map = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
            err = -errno;
    }
    if (err) {
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
        return err;
    }
    ring_fd = fd;
    ring_init(map, rate_hz, slot_ring);
    ring_header->parent_pid = (int32_t)getppid();
    return 0;
}

/* The unwind tables' object (proto/osp_unwind.h): a memfd, sparse, its header written
 * through the file, mapped read-only. It has no name, so nothing can be left behind in
 * /dev/shm whatever becomes of the program or of ospreyd (which gets the descriptor at spawn,
 * as --unwind-fd N). Without it (no room for even the header, too little address space) the
 * stacks come from frame pointers alone, and one line says so. */
static void unwind_create(void)
{
    int fd = (int)osp__sys(SYS_memfd_create, (long)"osprey-unwind", MFD_CLOEXEC, 0, 0, 0);
    int err = fd < 0 ? -errno : 0;
    struct osp_unwind_header h = {.magic = OSP_UNWIND_MAGIC,
                                  .abi_version = OSP_UNWIND_ABI_VERSION,
                                  .header_size = OSP_UNWIND_HEADER_SIZE,
                                  .size = OSP_UNWIND_DEFAULT_SIZE,
                                  .arch = OSP__CPU_ELF_MACHINE,
                                  .row_size = sizeof(struct osp_unwind_row)};
    if (err == 0 && ftruncate(fd, (off_t)OSP_UNWIND_DEFAULT_SIZE) != 0)
        err = -errno;
    /* The header's page is reserved: it is the one page the program reads before ospreyd
     * writes anything. */
    if (err == 0)
        err = -posix_fallocate(fd, 0, OSP_UNWIND_HEADER_SIZE);
    if (err == 0 && pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        err = -EIO;
    if (err == 0) {
        unwind_map = mmap(NULL, OSP_UNWIND_DEFAULT_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        if (unwind_map == MAP_FAILED)
            err = -errno;
    }
    if (err) {
        if (fd >= 0)
            osp__sys(SYS_close, fd, 0, 0, 0, 0);
        osp__warn("cannot create the unwind tables (%s); stacks follow frame pointers only",
                  strerror(-err));
        return;
    }
    unwind_fd = fd;
    osp__unwind_set_tables(unwind_map, OSP_UNWIND_DEFAULT_SIZE);
}

/* ospreyd holds its own descriptors now (or never will): ours go. */
static void handover_close(void)
{
    if (unwind_fd >= 0)
        osp__sys(SYS_close, unwind_fd, 0, 0, 0, 0);
    unwind_fd = -1;
    osp__switches_close(switch_fds, switch_count); /* and the switch events: ospreyd's now */
    switch_count = 0;
    if (forks_fd >= 0)
        osp__sys(SYS_close, forks_fd, 0, 0, 0, 0); /* and the forks' socket */
    forks_fd = -1;
    if (ring_fd >= 0)
        osp__sys(SYS_close, ring_fd, 0, 0, 0, 0); /* and the ring's memfd: mapped, and theirs */
    ring_fd = -1;
    if (run_lock_fd >= 0)
        osp__sys(SYS_close, run_lock_fd, 0, 0, 0, 0); /* and the run's lock */
    run_lock_fd = -1;
}

/* Never blocks, and skips (saying so once a run) what is not our lock. */
static void run_lock_take(void)
{
    char lock[PATH_MAX + sizeof OSP_RUN_LOCK + 2];
    const char *slash = strrchr(out_path, '/');
    int dir = slash != NULL ? (int)(slash - out_path) : 0;
    snprintf(lock, sizeof lock, "%.*s/%s", dir, out_path, OSP_RUN_LOCK);
    /* The profile's directory may be /tmp: whatever another user put at this name (a FIFO
     * whose open would never return, a link, a file of theirs) is not our run's lock. */
    int fd = osp__open_shared(lock);
    if (fd < 0 && fd != -ENOENT && boot_env.root_pid == 0) /* said once, by the run's first */
        osp__warn("%s %s; not used as the run's lock (osprey cannot wait for this profile)", lock,
                  osp__shared_strerror(fd));
    /* Not blocking: held exclusively, the run is over for osprey already. */
    if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0) {
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
        fd = -1;
    }
    run_lock_fd = fd >= 0 ? fd : -1;
}

static void unwind_destroy(void)
{
    osp__unwind_set_tables(NULL, 0);
    if (unwind_map != MAP_FAILED) {
        munmap(unwind_map, OSP_UNWIND_DEFAULT_SIZE);
        unwind_map = MAP_FAILED;
    }
    handover_close();
}

static void ring_destroy(void)
{
    unwind_destroy();
    if (ring_header) {
        munmap(ring_header, ring_bytes);
        ring_header = NULL;
    }
    shm_name[0] = '\0';
    if (ring_fd >= 0)
        osp__sys(SYS_close, ring_fd, 0, 0, 0, 0);
    ring_fd = -1;
}

static int executable(const char *path)
{
    return access(path, X_OK) == 0;
}

/* Where ospreyd is: $OSPREY_DAEMON; beside the shim (<dir>/../daemon/ospreyd, the build
 * tree); the install path. */
static int find_daemon(const struct boot_env *env, char *out, size_t outsz)
{
    if (env->has_daemon) {
        snprintf(out, outsz, "%s", env->daemon);
        return 0;
    }
    Dl_info info;
    struct link_map *map = NULL;
    char self[PATH_MAX] = "";
    if (dladdr1((void *)osp_prof_boot, &info, (void **)&map, RTLD_DL_LINKMAP) != 0) {
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

/* Sleep with the C library's nanosleep, guarded as the program's own sleeps are (guard.c):
 * boot's naps run on the program's thread, registered (the reap in spawn_daemon: a signal of
 * ours cannot cut it short, and its wait is recorded as any guarded wait) or not (at exit: the
 * guard stands aside once profiling is off). Not inlined: like guard.c's wrappers, one frame
 * of ours between the wait and its caller, which the wait's stack leaves out. */
__attribute__((noinline)) static void nap_guarded(const struct timespec *req)
{
    static _Atomic(void *) cache;
    void *sym = osp__next_symbol(&cache, "nanosleep");
    if (sym == NULL)
        return;
    int (*real)(const struct timespec *, struct timespec *);
    memcpy(&real, &sym, sizeof(real));
    sigset_t old;
    int guarded = osp__timespec_blocks(req) ? osp__guard_begin(&old, sym) : 0;
    real(req, NULL);
    osp__guard_end(guarded, &old);
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
 * own start (exec, dynamic linking: 5-9 ms here). The grandchild, with a memory of its own,
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
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } dfl = {SIG_DFL, 0, NULL, 0};
    for (long sig = 1; sig < 65; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            osp__sys(SYS_rt_sigaction, sig, (long)&dfl, 0, 8, 0);
    uint64_t empty = 0;
    osp__sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&empty, 0, 8, 0);
    osp__sys(SYS_execve, (long)spawn->path, (long)spawn->argv, (long)spawn->envp, 0, 0);
    osp__sys(SYS_exit, 127, 0, 0, 0, 0);
    return 127;
}

/* Start ospreyd --ring-fd 3 --ring-name NAME --out PATH --detached from a grandchild (spawn_child)
 * and reap the short-lived child right away, so the daemon is never the program's child. Does not
 * wait for the daemon. */
static int spawn_daemon(const struct boot_env *env)
{
    char daemon[PATH_MAX];
    if (find_daemon(env, daemon, sizeof(daemon)) != 0) {
        osp__warn("cannot find ospreyd (set OSPREY_DAEMON); no profile will be written to %s",
                  out_path);
        return -ENOENT;
    }
    if (access(daemon, X_OK) != 0) {
        int err = errno;
        osp__warn("cannot start %s: %s; no profile will be written to %s", daemon, strerror(err),
                  out_path);
        return -err;
    }
    char *argv[22] = {"ospreyd", "--ring-fd", "3",      "--ring-name",
                      shm_name,  "--out",     out_path, "--detached"};
    int argc = 8;
    int fds[OSP__SPAWN_FDS];
    int count = 0;
    fds[count++] = ring_fd;
    for (int i = 0; i < switch_count; i++)
        fds[count++] = switch_fds[i];
    char switches[16], forks[16], unwind[16];
    if (switch_count > 0) {
        snprintf(switches, sizeof switches, "%d", switch_count);
        argv[argc++] = "--switch-fds";
        argv[argc++] = switches;
    }
    if (forks_fd >= 0) {
        snprintf(forks, sizeof forks, "%d", 3 + count);
        fds[count++] = forks_fd;
        argv[argc++] = "--forks-fd";
        argv[argc++] = forks;
    }
    if (unwind_fd >= 0) {
        snprintf(unwind, sizeof unwind, "%d", 3 + count);
        fds[count++] = unwind_fd;
        argv[argc++] = "--unwind-fd";
        argv[argc++] = unwind;
    }
    char lock[16];
    if (run_lock_fd >= 0) {
        snprintf(lock, sizeof lock, "%d", 3 + count);
        fds[count++] = run_lock_fd;
        argv[argc++] = "--run-lock-fd";
        argv[argc++] = lock;
    }
    if (env->has_export) {
        argv[argc++] = "--export";
        argv[argc++] = (char *)env->export_formats;
    }
    argv[argc] = NULL;
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
                  strerror(err ? err : EAGAIN), out_path);
        return err ? -err : -EAGAIN;
    }
    daemon_spawned_pid = spawn.pid;
    return 0;
}

/* /proc/PID/stat (`path`) read into `buf` with raw calls: its fields after comm, from the
 * state (field 3) on, or NULL. */
static const char *proc_stat_fields(const char *path, char *buf, size_t size)
{
    long fd = osp__sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0);
    if (fd < 0)
        return NULL;
    long n = osp__sys(SYS_read, fd, (long)buf, (long)size - 1, 0, 0);
    osp__sys(SYS_close, fd, 0, 0, 0, 0);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold anything */
    return end != NULL && end[1] == ' ' ? end + 2 : NULL;
}

/* Has process pid ended (no such process, or a zombie its reaper has not collected: osprey is
 * the run's subreaper)? Raw calls, at exit. */
static int process_ended(long pid)
{
    if (osp__sys(SYS_kill, pid, 0, 0, 0, 0) != 0)
        return errno == ESRCH;
    char path[48], stat[160];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const char *fields = proc_stat_fields(path, stat, sizeof stat);
    return fields != NULL && (fields[0] == 'Z' || fields[0] == 'X');
}

static void wait_for_daemon(void)
{
    uint64_t limit = (uint64_t)OSPREY_DAEMON_WAIT_MS * 1000000u;
    uint64_t start = osp__mono_ns();
    unsigned waits = 0;
    for (;;) {
        /* Acquire: pairs with ospreyd's release store after the file is renamed or
         * daemon_error is written. */
        uint32_t state = atomic_load_explicit(&ring_header->daemon_state, memory_order_acquire);
        if (state == OSP_DAEMON_DONE)
            return;
        if (state == OSP_DAEMON_FAILED) {
            char line[sizeof(ring_header->daemon_error)];
            memcpy(line, ring_header->daemon_error, sizeof(line));
            line[sizeof(line) - 1] = '\0';
            for (char *c = line; *c; c++)
                if (*c == '\n' || *c == '\r')
                    *c = ' ';
            osp__warn("%s", line);
            return;
        }
        int32_t dpid = atomic_load_explicit(&ring_header->daemon_pid, memory_order_relaxed);
        int gone = state == OSP_DAEMON_ATTACHED && dpid > 0 &&
                   osp__sys(SYS_kill, dpid, 0, 0, 0, 0) != 0 && errno == ESRCH;
        if (gone) {
            osp__warn("ospreyd ended before writing %s; the profile is missing", out_path);
            return;
        }
        /* One that ended before it attached (killed, or crashed at its start) is looked for
         * every 16 ms: otherwise the program's exit would wait the whole limit for it. */
        if (state == OSP_DAEMON_NONE && daemon_spawned_pid > 0 && (waits++ & 15) == 0 &&
            process_ended(daemon_spawned_pid)) {
            osp__warn("ospreyd ended before it attached; no profile was written to %s", out_path);
            return;
        }
        if (osp__mono_ns() - start >= limit) {
            if (OSPREY_DAEMON_WAIT_MS % 1000 == 0)
                osp__warn("ospreyd did not finish writing %s within %d s; the profile may be "
                          "missing",
                          out_path, OSPREY_DAEMON_WAIT_MS / 1000);
            else
                osp__warn("ospreyd did not finish writing %s within %d ms; the profile may be "
                          "missing",
                          out_path, OSPREY_DAEMON_WAIT_MS);
            return;
        }
        /* Until ospreyd's state changes (it wakes this futex after each store), or 1 ms. A
         * shared futex: the word is in memory both processes map. */
        struct timespec nap = {0, 1000000};
        osp__sys(SYS_futex, (long)&ring_header->daemon_state, FUTEX_WAIT, (long)state, (long)&nap,
                 0);
    }
}

/* The registry lock, waiting at most a second: exit() may run in a signal handler that
 * interrupted the lock's holder on this very thread. */
static int lock_bounded(pthread_mutex_t *lock)
{
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 1;
    return pthread_mutex_timedlock(lock, &limit);
}

/* atexit: stop sampling, flush, publish the EXIT record, wait for ospreyd (bounded). Never
 * changes the exit status; a forked child's exit does nothing. */
static void at_exit(void)
{
    /* Inactive first: a forked child is, and the sandbox check before getpid, a system call
     * a sandbox may forbid. */
    if (!osp__is_active())
        return;
    if (atomic_load_explicit(&osp__sandboxed, memory_order_relaxed)) {
        atomic_store_explicit(&osp__active_flag, 0, memory_order_release);
        /* Inside a sandbox: the exit record alone (shared memory, no system call); ospreyd
         * writes the profile on its own, and nobody waits for it. */
        struct osp_rec_exit rec = {
            .dropped = atomic_load_explicit(&ring_header->dropped, memory_order_relaxed)};
        if (pthread_mutex_trylock(&osp__the_registry.lock) == 0) {
            osp__event_ring_write(&event_ring, OSP_REC_EXIT, &rec, sizeof(rec), NULL, 0);
            osp__the_registry.stopped = 1;
            pthread_mutex_unlock(&osp__the_registry.lock);
        }
        return;
    }
    if (getpid() != osp__booted_pid)
        return;
    atomic_store_explicit(&osp__active_flag, 0, memory_order_release);
    osp__registry_disarm_timers(&osp__the_registry);
    /* Bounded, like the registry lock below: without it the final image list is skipped. */
    int have_images = lock_bounded(&images_lock) == 0;
    if (have_images)
        osp__images_scan(&images); /* the loader lock, never under the registry lock */

    struct osp__registry *reg = &osp__the_registry;
    /* Acquire: pairs with ospreyd's release store of its state. */
    int attached = atomic_load_explicit(&ring_header->daemon_state, memory_order_acquire) ==
                   OSP_DAEMON_ATTACHED;
    for (int attempt = 0;; attempt++) {
        if (lock_bounded(&reg->lock) != 0) {
            if (have_images)
                pthread_mutex_unlock(&images_lock);
            osp__warn("the profiler's registry is locked at exit; the profile at %s may be "
                      "incomplete",
                      out_path);
            return;
        }
        if (attempt == 0) {
            osp__registry_pay_at_exit(reg);
            osp__registry_flush_waits(reg, osp__mono_ns());
            if (have_images)
                osp__images_emit(&images, &event_ring);
        }
        struct osp_rec_exit rec = {
            .end_unix_ns = unix_ns(),
            .dropped = atomic_load_explicit(&ring_header->dropped, memory_order_relaxed),
        };
        int err = osp__event_ring_write(&event_ring, OSP_REC_EXIT, &rec, sizeof(rec), NULL, 0);
        if (err == 0 || attempt >= 200 || !attached) {
            /* A forked child that recorded nothing leaves no profile: nothing to wait for. */
            if (ring_header->ring_flags & OSP_RING_FORKED && !osp__registry_recorded(reg) &&
                atomic_load_explicit(&ring_header->escapes, memory_order_relaxed) == 0)
                daemon_spawned = 0;
            reg->stopped = 1; /* nothing follows the exit record */
            pthread_mutex_unlock(&reg->lock);
            break;
        }
        pthread_mutex_unlock(&reg->lock);
        /* The ring is full and ospreyd is draining it: give it a moment. */
        attached = atomic_load_explicit(&ring_header->daemon_state, memory_order_acquire) ==
                   OSP_DAEMON_ATTACHED;
        struct timespec nap = {0, 1000000};
        nap_guarded(&nap);
    }
    if (have_images)
        pthread_mutex_unlock(&images_lock);
    /* Release: the exit record's head store (B) happens before; ospreyd loads acquire. */
    atomic_store_explicit(&ring_header->shim_state, OSP_SHIM_EXITED, memory_order_release);
    /* Acquire: pairs with ospreyd's release; the profile ended at its duration, ospreyd is gone. */
    int stopped = atomic_load_explicit(&ring_header->stopped, memory_order_acquire) != 0;
    /* A descendant (a forked child, an image another profiled process started) whose
     * collector has not attached yet (it starts a few milliseconds after the process) does
     * not wait for it: the ring outlives the process in the collector's descriptor, and the
     * collector reads it to the end whenever it comes; osprey waits for every collector of
     * the run (OSP_RUN_LOCK). Nor does one whose collector holds the run's lock, attached or
     * not: osprey waits for it (a short command's collector, started faster, attached before
     * it ended, and it waited for its profile to be written). The run's first process waits,
     * so that its profile is there when it has ended. */
    if (run_root_pid != 0 && run_root_pid != (long)getpid() &&
        (run_locked ||
         atomic_load_explicit(&ring_header->daemon_state, memory_order_acquire) == OSP_DAEMON_NONE))
        daemon_spawned = 0;
    if (daemon_spawned && !stopped) {
        /* ospreyd reads the rings on a tick: wake it now rather than at its next one (SIGURG,
         * whose default action is to ignore it, so an ospreyd still starting is not hurt). */
        int32_t dpid = atomic_load_explicit(&ring_header->daemon_pid, memory_order_relaxed);
        if (dpid > 0)
            osp__sys(SYS_kill, dpid, SIGURG, 0, 0, 0);
        wait_for_daemon();
    }
    /* Relaxed: stored before DONE, whose acquire wait_for_daemon made. */
    if (atomic_load_explicit(&ring_header->wrote_beside, memory_order_relaxed)) {
        char beside[PATH_MAX + 32];
        if (osp_per_pid_path(out_path, (long)getpid(), NULL, beside, sizeof beside) == 0)
            osp__warn("%s was written by another profiled process meanwhile; this profile is %s",
                      out_path, beside);
    }
    /* Relaxed: counts read once at the end. */
    uint64_t lost = atomic_load_explicit(&ring_header->dropped, memory_order_relaxed) +
                    atomic_load_explicit(&ring_header->daemon_dropped, memory_order_relaxed);
    if (lost > 0 && !stopped) /* after a stop, the profile said so itself */
        osp__warn("%llu sampling periods could not be recorded (%s); the profile undercounts",
                  (unsigned long long)lost,
                  atomic_load_explicit(&ring_header->daemon_dropped, memory_order_relaxed) > 0
                      ? "ospreyd's memory budget"
                      : "the shared rings were full: ospreyd fell behind");
}

static void thread_ends(void *value)
{
    (void)value;
    osp_prof_thread_unregister();
}

static int thread_key_init(void)
{
    if (thread_key_ready)
        return 0;
    int err = pthread_key_create(&thread_key, thread_ends);
    if (err)
        return -err;
    thread_key_ready = 1;
    return 0;
}

/* Arrange for the calling (registered) thread to be unregistered when it ends. */
static void thread_key_mark(void)
{
    if (thread_key_ready)
        pthread_setspecific(thread_key, (void *)1);
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
static void forks_listen(void)
{
    struct sockaddr_un addr;
    socklen_t length = forks_address(&addr, shm_name);
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
    forks_fd = (int)sock;
}

/* The socket a forked child greets its parent's collector with, connected: made first of all
 * its descriptors, so that a low descriptor limit (RLIMIT_NOFILE) takes the optional ones (the
 * switch events, its own children's socket), not the one every other needs to reach a
 * collector. A descriptor; -EPERM when the listener is another user's (below); else -errno
 * (no collector listening, or its queue full: the child starts one itself). Raw system
 * calls: neither the program's interposers nor our guards see them. */
static long greeting_connect(const char *parent_ring)
{
    struct sockaddr_un addr;
    socklen_t length = forks_address(&addr, parent_ring);
    if (length == 0)
        return -ENAMETOOLONG;
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

/* A forked child greets its parent's collector (see "Forked children" in proto/osp_ring.h):
 * one message on `sock` (greeting_connect's, closed here) with the ring's descriptor and the
 * switch events'. 0 once the message is sent. */
static int greet_parent(long sock)
{
    if (sock < 0)
        return (int)sock;
    int err = 0;
    static struct osp_fork_hello hello; /* static: 4 KiB, and one child boots once */
    memset(&hello, 0, sizeof hello);
    hello.magic = OSP_FORK_HELLO_MAGIC;
    hello.abi_version = OSP_RING_ABI_VERSION;
    hello.pid = (int32_t)getpid();
    hello.switch_fds = (uint32_t)switch_count;
    snprintf(hello.ring_name, sizeof hello.ring_name, "%s", shm_name);
    snprintf(hello.out_path, sizeof hello.out_path, "%s", out_path);
    static union {
        struct cmsghdr header;
        char bytes[CMSG_SPACE(sizeof(int) * (3 + OSP_MAX_SWITCH_FDS))];
    } control;
    int fds[3 + OSP_MAX_SWITCH_FDS];
    int n_fds = 0;
    fds[n_fds++] = ring_fd;
    for (int i = 0; i < switch_count; i++)
        fds[n_fds++] = switch_fds[i];
    if (forks_fd >= 0)
        fds[n_fds++] = forks_fd;
    if (unwind_fd >= 0)
        fds[n_fds++] = unwind_fd;
    hello.listener = forks_fd >= 0;
    hello.unwind = unwind_fd >= 0;
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
    osp__sys(SYS_close, sock, 0, 0, 0, 0);
    return err;
}

/* In a forked child, before fork returns: a profile of its own, as boot makes one, from what
 * boot read and decided; the images are the parent's at the fork, the unwind tables the
 * parent's (still mapped: the address space is the same), the thread the one that forked,
 * under its name. Its collector is started by the parent's, greeted with the ring; when that
 * one cannot be reached, one is started as boot starts one. */
static void boot_forked(pid_t parent, int64_t fiber, const char *label, uint64_t stop_at_ns,
                        const char *parent_ring)
{
    pid_t pid = getpid();
    /* A thread of the parent's that held this lock at the fork was reading the loaded objects
     * (perhaps under the loader's own lock, which is held for good here): neither the list
     * nor a new scan can be trusted, and the child is left unprofiled. */
    if (pthread_mutex_trylock(&images_lock) != 0) {
        pthread_mutex_init(&images_lock, NULL);
        osp__warn("forked process %d is not profiled: it was forked while the profiler read the "
                  "loaded objects",
                  (int)pid);
        return;
    }
    if (osp_per_pid_path(profile_absolute, (long)pid, NULL, out_path, sizeof out_path) != 0) {
        pthread_mutex_unlock(&images_lock);
        return;
    }
    long greeting = greeting_connect(parent_ring);
    if (greeting == -EPERM) { /* its parent's collector names it */
        pthread_mutex_unlock(&images_lock);
        return;
    }
    int err = ring_create(boot_rate, random64(), 0);
    if (err) {
        osp__warn("cannot create the shared-memory ring of forked process %d: %s; it is not "
                  "profiled",
                  (int)pid, strerror(-err));
        if (greeting >= 0)
            osp__sys(SYS_close, greeting, 0, 0, 0, 0);
        pthread_mutex_unlock(&images_lock);
        return;
    }
    ring_header->stop_at_ns = stop_at_ns;
    ring_header->parent_pid = (int32_t)parent;
    ring_header->ring_flags = OSP_RING_FORKED;
    unwind_create();
    switch_count = osp__switches_open(switch_fds, OSP_MAX_SWITCH_FDS, OSP__SWITCH_FORK_PAGES);
    osp__timer_ids_after_fork();
    err = osp__registry_init(&osp__the_registry, &event_ring, OSP__MAX_SLOTS);
    if (err) {
        ring_destroy();
        if (greeting >= 0)
            osp__sys(SYS_close, greeting, 0, 0, 0, 0);
        pthread_mutex_unlock(&images_lock);
        return;
    }
    osp__registry_set_table(&osp__the_registry, ring_header);
    osp__set_period(boot_rate);
    osp__header = ring_header;
    osp__images_unsend(&images); /* images_lock held: taken first thing (above) */
    pthread_mutex_lock(&osp__the_registry.lock);
    osp__images_emit(&images, &event_ring);
    pthread_mutex_unlock(&osp__the_registry.lock);
    pthread_mutex_unlock(&images_lock);
    osp__bookkeeping_set(run_root_pid, (long)pid);
    osp__booted_pid = pid;
    atomic_store_explicit(&registry_ready, 1, memory_order_release);
    atomic_store_explicit(&osp__active_flag, 1, memory_order_release);
    forks_listen();
    daemon_spawned_pid = 0; /* the parent's; a collector the parent's hands over has none */
    err = greet_parent(greeting);
    /* A child in a session of its own whose parent's collector is gone is a daemon whose
     * middle process has ended: a collector of its own would be in its session, not the
     * program's, and would hold the run's lock as long as the daemon runs (osprey would wait
     * for it); its parent's collector would have ended its profile (ospreyd.c). */
    if (err != 0 && boot_session > 0 && getsid(0) != boot_session) {
        osp__warn("process %d left the session (a daemon) after its parent's collector ended; "
                  "it is not profiled",
                  (int)pid);
        daemon_spawned = 0;
    } else {
        daemon_spawned = err == 0 || spawn_daemon(&boot_env) == 0;
    }
    handover_close(); /* the ring, the switch events: the collector's now */
    if (!daemon_spawned)
        osp__kernel_waits_off();
    /* Last: its timers start sampling now, and none of this boot's CPU is the program's. */
    osp_prof_thread_register(fiber, label);
}

/* In a new process, the parent's copy: the parent's ring, tables and events are the parent's:
 * the child lets go of them, then profiles itself (boot_forked) when `allowed` and unless the
 * parent's profile had stopped, the program took SIGPROF or entered a sandbox, or
 * OSPREY_PROFILE_FORKS=0. Only the calling thread exists. */
static void fork_child(int allowed)
{
    osp__read_code_init();
    pid_t parent = osp__booted_pid;
    int profiled = allowed && osp__is_active() && ring_header != NULL &&
                   !atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) &&
                   !atomic_load_explicit(&ring_header->stopped, memory_order_acquire) &&
                   atomic_load_explicit(&ring_header->signals_paused, memory_order_acquire) == 0 &&
                   !boot_env.forks_off;
    uint64_t stop_at_ns = ring_header != NULL ? ring_header->stop_at_ns : 0;
    int64_t fiber = 0;
    char label[OSP_MAX_LABEL + 1] = "main";
    struct osp__slot *self = osp__tls_slot;
    if (self != NULL && self->active) {
        fiber = self->fiber;
        snprintf(label, sizeof label, "%s", self->label);
    }
    char parent_ring[OSP_RING_NAME_SIZE];
    snprintf(parent_ring, sizeof parent_ring, "%s", shm_name);
    atomic_store_explicit(&osp__active_flag, 0, memory_order_relaxed);
    atomic_store_explicit(&registry_ready, 0, memory_order_relaxed);
    osp__tls_slot = NULL;
    osp__header = NULL;
    if (ring_header) {
        munmap(ring_header, ring_bytes);
        ring_header = NULL;
    }
    event_ring.header = NULL;
    shm_name[0] = '\0';
    daemon_spawned = 0;
    if (!profiled) {
        osp__unwind_set_tables(NULL, 0);
        if (unwind_map != MAP_FAILED) {
            munmap(unwind_map, OSP_UNWIND_DEFAULT_SIZE);
            unwind_map = MAP_FAILED;
        }
    } else {
        osp__unwind_fork();      /* the parent's tables, until the child's own are published */
        unwind_map = MAP_FAILED; /* mapped still, and read */
    }
    handover_close();
    osp__kernel_waits_off(); /* the parent's */
    if (profiled)
        boot_forked(parent, fiber, label, stop_at_ns, parent_ring);
}

/* pthread_atfork child. */
static void at_fork_child(void)
{
    fork_child(1);
}

void osp__pay_before_exit(void)
{
    /* Inactive (after exit's handler, in a child we do not profile), in a sandbox (getpid may
     * be forbidden), or in a vfork child (the parent's memory, another process): nothing. */
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) ||
        getpid() != osp__booted_pid)
        return;
    sigset_t old;
    if (osp__sigprof_mask_raw(SIG_BLOCK, &old) != 0) /* no handler of ours from here on */
        return;
    osp__registry_pay_at_exit(&osp__the_registry);
}

int osp__threads_in_process(void)
{
    char buf[1024];
    const char *p = proc_stat_fields("/proc/self/stat", buf, sizeof buf);
    /* num_threads is field 20; p is at field 3. */
    for (int field = 3; p != NULL && *p != '\0'; p++)
        if (*p == ' ' && ++field == 20)
            return atoi(p + 1);
    return 0;
}

void osp__cloned_child(int single_threaded)
{
    /* A process our boot or fork_child saw already (a fork's handler ran), or none of ours. */
    if (!osp__is_active() || getpid() == osp__booted_pid)
        return;
    if (!single_threaded)
        osp__warn("process %d, made by calling clone directly in a program of several threads, "
                  "is not profiled",
                  (int)getpid());
    fork_child(single_threaded);
}

static void boot(void)
{
    read_env(&boot_env);
    if (!boot_env.has_profile)
        return;
    osp__warn_remember_stderr();
    /* Secure mode (setuid, setgid, file capabilities: AT_SECURE): the caller's environment is
     * not to be trusted, as glibc ignores LD_PRELOAD there. OSPREY_DAEMON would run a program
     * of the caller's choosing with the process's privileges, OSPREY_PROFILE write where the
     * caller cannot. Nothing of ours starts; one line says why. */
    if (getauxval(AT_SECURE)) {
        osp__warn("a privileged (setuid, setgid or capability) program ignores OSPREY_*; "
                  "profiling is off");
        return;
    }
    if (osp__sigprof_foreign()) {
        osp__warn("the program already has a SIGPROF handler; profiling is off");
        return;
    }
    int bad = 0;
    uint32_t rate = osp__parse_rate(boot_env.has_hz ? boot_env.hz : NULL, &bad);
    /* Said once per run, by its first image: every descendant reads the same variable. */
    int first_image = boot_env.root_pid == 0 && boot_env.last_pid == 0;
    if (bad == 1 && first_image)
        osp__warn("OSPREY_PROFILE_HZ=%s is not a number; sampling at %u Hz", boot_env.hz, rate);
    if (bad == 2 && first_image)
        osp__warn("OSPREY_PROFILE_HZ=%s is outside %u..%u; sampling at %u Hz", boot_env.hz,
                  OSP__MIN_RATE, OSP__MAX_RATE, rate);

    boot_rate = rate;
    uint64_t random_bits = random64();
    int err = resolve_out_path(&boot_env, random_bits);
    if (err) {
        osp__warn("cannot use OSPREY_PROFILE=%s: %s; profiling is off", boot_env.profile,
                  strerror(-err));
        return;
    }
    /* The run's first image reserves its ring; a descendant's, or a later image's of the same
     * process (it exec'd), stays sparse, as a forked child's: a build or a shell script starts
     * hundreds, and reserving costs each 1.6 ms. */
    int reserve = run_root_pid == (long)getpid() && boot_env.last_pid == 0;
    err = ring_create(rate, random_bits, reserve);
    if (err == -ECANCELED)
        return; /* ring_create said why */
    if (err) {
        osp__warn("cannot create the shared-memory ring: %s; profiling is off", strerror(-err));
        return;
    }
    if (boot_env.has_until) {
        /* One end for every image of the run (osprey --duration sets it): a launcher that
         * execs the program, and the program, stop at the same instant. */
        char *end;
        unsigned long long until = strtoull(boot_env.until, &end, 10);
        if (end != boot_env.until && *end == '\0' && until > 0)
            ring_header->stop_at_ns =
                until > ring_header->start_mono_ns ? until : ring_header->start_mono_ns;
    } else if (boot_env.has_seconds) {
        char *end;
        double seconds = strtod(boot_env.seconds, &end);
        if (end != boot_env.seconds && *end == '\0' && seconds > 0 && seconds < 1e7)
            ring_header->stop_at_ns = ring_header->start_mono_ns + (uint64_t)(seconds * 1e9);
        else
            osp__warn("OSPREY_PROFILE_SECONDS=%s is not a positive number of seconds; profiling "
                      "until the program ends",
                      boot_env.seconds);
    }
    unwind_create();
    /* The kernel allocates and clears an event ring's pages as it is mapped: a later image's
     * are a forked child's quarter, read at every drain as a forked worker's are (a /bin/true
     * booting without a collector: 0.90-1.01 ms of CPU with two CPUs' full rings, 0.84-0.93
     * with quarters, 0.38-0.44 unprofiled). */
    switch_count = osp__switches_open(switch_fds, OSP_MAX_SWITCH_FDS,
                                      reserve ? OSP_SWITCH_RING_PAGES : OSP__SWITCH_FORK_PAGES);
    err = osp__registry_init(&osp__the_registry, &event_ring, OSP__MAX_SLOTS);
    if (err == 0) {
        osp__registry_set_table(&osp__the_registry, ring_header);
        osp__set_period(rate);
        osp__header = ring_header;
    }
    if (err == 0)
        err = thread_key_init();
    if (err == 0)
        err = osp__images_init(&images);
    if (err == 0)
        err = osp__images_scan(&images);
    if (err == 0) {
        pthread_mutex_lock(&osp__the_registry.lock);
        osp__images_emit(&images, &event_ring);
        pthread_mutex_unlock(&osp__the_registry.lock);
        err = osp__sigprof_install(osp__sigprof_handler);
    }
    if (err) {
        osp__warn("cannot start profiling: %s; profiling is off", strerror(-err));
        ring_destroy();
        return;
    }
    osp__booted_pid = getpid();
    osp__read_code_init();
    osp__fds_timed_scan(); /* sockets with a timeout inherited across exec */
    pthread_atfork(NULL, NULL, at_fork_child);
    atomic_store_explicit(&registry_ready, 1, memory_order_release);
    /* Release: a thread that sees the flag sees the registry and ring set up above. */
    atomic_store_explicit(&osp__active_flag, 1, memory_order_release);
    if (gettid() == getpid())
        osp_prof_thread_register(0, "main");
    forks_listen();
    run_lock_take();
    run_locked = run_lock_fd >= 0;
    daemon_spawned = spawn_daemon(&boot_env) == 0;
    handover_close(); /* ospreyd has its own now */
    if (!daemon_spawned)
        osp__kernel_waits_off(); /* nobody will read them */
    atexit(at_exit);
}

void osp_prof_boot(void)
{
    pthread_once(&boot_once, boot);
}

int osp_prof_active(void)
{
    return osp__is_active();
}

void osp_prof_thread_register(int64_t fiber_id, const char *label)
{
    if (!osp__is_active())
        return;
    if (osp__registry_register(&osp__the_registry, fiber_id, label) == 0) {
        thread_key_mark();
        osp__sigmask_adopt(0); /* sampled even where the program blocks every signal */
    }
    osp__images_refresh();
}

void osp__images_refresh(void)
{
    if (!osp__is_active() || getpid() != osp__booted_pid)
        return;
    /* Threads register at once: the image table is one. Lock order: images, then registry. */
    pthread_mutex_lock(&images_lock);
    if (osp__images_changed(&images)) {
        osp__images_scan(&images); /* the loader lock, never under the registry lock */
        pthread_mutex_lock(&osp__the_registry.lock);
        if (!osp__the_registry.stopped)
            osp__images_emit(&images, &event_ring);
        pthread_mutex_unlock(&osp__the_registry.lock);
    }
    pthread_mutex_unlock(&images_lock);
}

void osp_prof_thread_unregister(void)
{
    /* Not osp__is_active(): after the exit handler cleared it, a thread that ends must still
     * leave the registry (its timer, its slot). Acquire: pairs with the release in boot. */
    if (!atomic_load_explicit(&registry_ready, memory_order_acquire))
        return;
    osp__registry_unregister(&osp__the_registry);
}

/* Both builds boot when loaded: the shared library (LD_PRELOAD) and the static archive (linked
 * with --whole-archive). The real functions behind the interposers are looked up first, before
 * the program's main runs (libc.c). */
__attribute__((constructor)) static void boot_at_load(void)
{
    osp__libc_resolve_all();
    osp_prof_boot();
}
