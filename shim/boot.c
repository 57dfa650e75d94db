/* boot.c — activation: the constructor and the public entry points.
 *
 * Owns the constructor, osp_prof_boot and osp_prof_active, and the checks before a profile
 * starts: OSPREY_PROFILE set, not a privileged program, no SIGPROF handler of the program's,
 * the rate and the profile's path usable. The start itself is start.c's; exit and fork are
 * exit.c's and fork.c's.
 *
 * Off means off: without OSPREY_PROFILE nothing here creates a thread, installs a handler,
 * maps memory or starts a process. When activation fails half-way the shim says so in one
 * line on stderr, undoes what it can, and the program runs on unprofiled.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"
#include "osp_policy.h"
#include "osp_ring_named.h"
#include "osprey_prof.h"

static pthread_once_t boot_once = PTHREAD_ONCE_INIT;

/* OSPREY_RING=NAME: a collector started apart (`ospreyd --attach-ring NAME --out PATH`)
 * profiles this one process image, whose ring is /dev/shm/osprey-ring-NAME; OSPREY_PROFILE is
 * not needed (the profile is the collector's --out) and nothing is started. Its new images
 * (exec'd, or started by its children) are not profiled: the bookkeeping handed to them
 * (descendants.c) says they are not the first. 0 when this image is profiled so. */
static int ring_named_boot(void)
{
    const char *name = osp__boot_env.ring;
    long first = osp__boot_env.root_pid;
    unsetenv("OSPREY_PROFILE_ROOT_PID");
    unsetenv("OSPREY_PROFILE_LAST_PID");
    unsetenv("OSPREY_PROFILE_GREET");
    if (first != 0 || osp__boot_env.last_pid != 0) {
        osp__warn("process %d is not profiled: a new image after process %ld's, profiled with "
                  "OSPREY_RING=%s (a collector started apart follows one process image)",
                  (int)getpid(), first != 0 ? first : osp__boot_env.last_pid, name);
        return -1;
    }
    char path[128];
    if (osp_ring_named_path(path, sizeof path, name, "") != 0) {
        osp__warn("OSPREY_RING=%s is not a name of up to %zu letters, digits, '-' or '_'; "
                  "profiling is off",
                  name, OSP_RING_NAMED_MAX);
        return -1;
    }
    snprintf(osp__out_path, sizeof osp__out_path, "the profile of ring %s", name);
    osp__run_root_pid = (long)getpid();
    osp__boot_session = getsid(0);
    osp__bookkeeping_set(osp__run_root_pid, osp__run_root_pid);
    return 0;
}

/* A later image of the run (exec'd, or started by a profiled process) greets the collector
 * OSPREY_PROFILE_GREET names ("<uid>:<ring>": its pid's previous image's, or the one of the
 * process that started it) with its ring, as a forked child greets its parent's, rather than
 * starting one (start.c). Only an image that runs as that user, real and effective, with its
 * real group: one of another user's connects to nothing and starts its own as before. The
 * connected socket, or -1 (none named, or none listening: it starts its own). */
static long image_greeting(int first_image)
{
    const char *greet = getenv("OSPREY_PROFILE_GREET");
    char ring[OSP_RING_NAME_SIZE] = "";
    unsigned long uid = ~0ul;
    if (greet != NULL) {
        char *end;
        uid = strtoul(greet, &end, 10);
        if (end != greet && *end == ':')
            snprintf(ring, sizeof ring, "%s", end + 1);
    }
    unsetenv("OSPREY_PROFILE_GREET"); /* the program never sees it */
    if (first_image || ring[0] == '\0' || uid != (unsigned long)getuid() ||
        uid != (unsigned long)geteuid() || getgid() != getegid())
        return -1;
    long sock = osp__greeting_connect(ring);
    return sock >= 0 ? sock : -1;
}

static void boot(void)
{
    osp__read_env(&osp__boot_env);
    if (!osp__boot_env.has_profile && !osp__boot_env.has_ring)
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
    /* Before any call a seccomp filter is likely to forbid: one that kills would kill the
     * program (seccomp.c). */
    if (osp__seccomp_check() != 0)
        return;
    if (osp__sigprof_foreign()) {
        osp__warn("the program already has a SIGPROF handler; profiling is off");
        return;
    }
    int bad = 0;
    uint32_t rate = osp__parse_rate(osp__boot_env.has_hz ? osp__boot_env.hz : NULL, &bad);
    /* Said once per run, by its first image: every descendant reads the same variable. */
    int first_image = osp__boot_env.root_pid == 0 && osp__boot_env.last_pid == 0;
    if (bad == 1 && first_image)
        osp__warn("OSPREY_PROFILE_HZ=%s is not a number; sampling at %u Hz", osp__boot_env.hz,
                  rate);
    if (bad == 2 && first_image)
        osp__warn("OSPREY_PROFILE_HZ=%s is outside %u..%u; sampling at %u Hz", osp__boot_env.hz,
                  OSP__MIN_RATE, OSP__MAX_RATE, rate);

    osp__boot_rate = rate;
    uint64_t random_bits = osp__random64();
    if (osp__boot_env.has_ring && ring_named_boot() != 0)
        return;
    int err = osp__boot_env.has_ring ? 0 : osp__resolve_out_path(&osp__boot_env, random_bits);
    if (err) {
        osp__warn("cannot use OSPREY_PROFILE=%s: %s; profiling is off", osp__boot_env.profile,
                  strerror(-err));
        return;
    }
    /* The run's first image reserves its ring; a descendant's, or a later image's of the same
     * process (it exec'd), stays sparse, as a forked child's: a build or a shell script starts
     * hundreds, and each would pay for reserving (shim/README.md, "Measuring"). */
    struct osp__start start = {
        .rate = rate,
        .random_bits = random_bits,
        .reserve = osp__run_root_pid == (long)getpid() && osp__boot_env.last_pid == 0,
        .greeting = image_greeting(first_image),
        .at_fork = osp__at_fork_child,
    };
    if (osp__profile_start(&start) != 0)
        return; /* said, and undone */
    atexit(osp__at_exit);
}

void osp_prof_boot(void)
{
    pthread_once(&boot_once, boot);
}

int osp_prof_active(void)
{
    return osp__is_active();
}

/* Both builds boot when loaded: the shared library (LD_PRELOAD) and the static archive (linked
 * with --whole-archive). The real functions behind the interposers are looked up first, before
 * the program's main runs (libc.c). */
__attribute__((constructor)) static void boot_at_load(void)
{
    osp__libc_resolve_all();
    osp_prof_boot();
}
