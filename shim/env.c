/* env.c — the environment and the profile's path, read and decided once at boot.
 *
 * Owns OSPREY_* read before anything is set (struct osp__boot_env), the raw profile's absolute
 * path (a descendant's or a later image's with its pid, so no profile overwrites another),
 * the run's root and session, the end of the profile from OSPREY_PROFILE_UNTIL_NS or
 * _SECONDS, the run's lock beside the profile (taken shared, handed to the collector), and
 * the wall clock and random bits boot names things with. A forked child reuses all of it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"

uint64_t osp__unix_ns(void)
{
    struct timespec ts;
    osp__clock_read(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct osp__boot_env osp__boot_env;
uint32_t osp__boot_rate;
char osp__profile_absolute[PATH_MAX];
long osp__run_root_pid;
pid_t osp__boot_session;

/* The raw profile's path (osp__resolve_out_path). */
char osp__out_path[PATH_MAX];
/* The run's lock (OSP_RUN_LOCK beside the profile, when osprey made one), held shared from
 * boot and handed to ospreyd, so that osprey never finds the run over between this image's
 * start and its collector's. */
int osp__run_lock_fd = -1;
/* This image handed the run's lock to its collector: osprey waits for that collector, so a
 * descendant's exit need not. */
int osp__run_locked;

static int copy_env(const char *name, char *out, size_t outsz)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0')
        return 0;
    snprintf(out, outsz, "%s", v);
    return 1;
}

void osp__read_env(struct osp__boot_env *env)
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
    env->has_ring = copy_env("OSPREY_RING", env->ring, sizeof(env->ring));
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
int osp__resolve_out_path(const struct osp__boot_env *env, uint64_t random_bits)
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
    snprintf(osp__profile_absolute, sizeof osp__profile_absolute, "%s", absolute);
    long pid = (long)getpid();
    int err = 0;
    if (env->last_pid == pid) {
        char extra[16];
        snprintf(extra, sizeof(extra), "%08x", (unsigned)random_bits);
        err = osp_per_pid_path(absolute, pid, extra, osp__out_path, sizeof(osp__out_path));
    } else if (env->root_pid != 0 && env->root_pid != pid) {
        err = osp_per_pid_path(absolute, pid, NULL, osp__out_path, sizeof(osp__out_path));
    } else if (strlen(absolute) >= sizeof(osp__out_path)) {
        err = -ENAMETOOLONG;
    } else {
        strcpy(osp__out_path, absolute);
    }
    if (err)
        return err;
    /* Descendants find these and write beside us. They are kept out of the environment the
     * program sees and added only to what it hands to a new image (preload.c). */
    if (env->root_pid == 0)
        setenv("OSPREY_PROFILE", absolute, 1); /* the user's own variable, made absolute */
    osp__run_root_pid = env->root_pid != 0 ? env->root_pid : pid;
    osp__boot_session = getsid(0);
    osp__bookkeeping_set(osp__run_root_pid, pid);
    unsetenv("OSPREY_PROFILE_ROOT_PID");
    unsetenv("OSPREY_PROFILE_LAST_PID");
    return 0;
}

uint64_t osp__random64(void)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
        /* No entropy yet (very early boot): mix what differs between processes. */
        r = osp__mono_ns() ^ (osp__unix_ns() << 17) ^ ((uint64_t)getpid() << 40) ^
            (uint64_t)(uintptr_t)&r;
    }
    return r;
}

/* Never blocks, and skips (saying so once a run) what is not our lock. */
void osp__run_lock_take(void)
{
    char lock[PATH_MAX + sizeof OSP_RUN_LOCK + 2];
    const char *slash = strrchr(osp__out_path, '/');
    int dir = slash != NULL ? (int)(slash - osp__out_path) : 0;
    snprintf(lock, sizeof lock, "%.*s/%s", dir, osp__out_path, OSP_RUN_LOCK);
    /* The profile's directory may be /tmp: whatever another user put at this name (a FIFO
     * whose open would never return, a link, a file of theirs) is not our run's lock. */
    int fd = osp__open_shared(lock);
    if (fd < 0 && fd != -ENOENT && osp__boot_env.root_pid == 0) /* said once, by the run's first */
        osp__warn("%s %s; not used as the run's lock (osprey cannot wait for this profile)", lock,
                  osp__shared_strerror(fd));
    /* Not blocking: held exclusively, the run is over for osprey already. */
    if (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0) {
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
        fd = -1;
    }
    osp__run_lock_fd = fd >= 0 ? fd : -1;
}

uint64_t osp__stop_at_from_env(uint64_t start_mono_ns)
{
    if (osp__boot_env.has_until) {
        /* One end for every image of the run (osprey --duration sets it): a launcher that
         * execs the program, and the program, stop at the same instant. */
        char *end;
        unsigned long long until = strtoull(osp__boot_env.until, &end, 10);
        if (end != osp__boot_env.until && *end == '\0' && until > 0)
            return until > start_mono_ns ? until : start_mono_ns;
    } else if (osp__boot_env.has_seconds) {
        char *end;
        double seconds = strtod(osp__boot_env.seconds, &end);
        if (end != osp__boot_env.seconds && *end == '\0' && seconds > 0 && seconds < 1e7)
            return start_mono_ns + (uint64_t)(seconds * 1e9);
        osp__warn("OSPREY_PROFILE_SECONDS=%s is not a positive number of seconds; profiling "
                  "until the program ends",
                  osp__boot_env.seconds);
    }
    return 0;
}
