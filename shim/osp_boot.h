/* osp_boot.h — layer 5 of the shim (see osp_base.h for the list): the profiled run itself.
 *
 *   descendants.c  the bookkeeping a descendant's new image needs, kept out of the program's
 *                  environment and added only to what it hands to exec and spawn
 *   boot.c         the constructor and the public API (osprey_prof.h): OSPREY_PROFILE, the
 *                  shared memory, ospreyd, the exit handler, fork; the process's registry,
 *                  event ring and image table; the guard's two halves (inline, below)
 *   control.c      pausing our signals around execve and for good once the program uses
 *                  SIGPROF itself
 *
 * Within the layer, calls go from later files in this list to earlier ones only. Uses layers
 * 1-4; used only by the interposers (preload.c, guard.c, signals.c), which have no header:
 * nothing in the shim calls them.
 */
#ifndef OSP_BOOT_H
#define OSP_BOOT_H

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "osp_core.h"

/* ---- descendants.c ----------------------------------------------------------------------- */

/* The bookkeeping a new image of a descendant needs ("OSPREY_PROFILE_ROOT_PID=...",
 * "OSPREY_PROFILE_LAST_PID=..."), kept out of the program's environment (set once at boot). */
void osp__bookkeeping_set(long root_pid, long last_pid);
size_t osp__env_count(char *const envp[]);
/* envp with the bookkeeping entries, built in `store` (n + 3 entries, on the caller's stack:
 * no malloc in a forked child), when the new image will be profiled; else envp itself. */
char *const *osp__env_with_bookkeeping(char *const envp[], size_t n, char **store);
/* Declare `name`: envp plus the bookkeeping, on this stack frame. */
#define OSP__ENV(name, envp)                                                                       \
    size_t name##_n = osp__env_count(envp);                                                        \
    char *name##_store[name##_n + 3];                                                              \
    char *const *name = osp__env_with_bookkeeping(envp, name##_n, name##_store)
/* system() and popen() start their child through the C library's own posix_spawn, with the
 * environment as it is: put the bookkeeping there for the call only. Returns 1 when it did
 * (then withdraw it after the call with that value). */
int osp__bookkeeping_export(void);
void osp__bookkeeping_withdraw(int exported);

/* ---- boot.c ------------------------------------------------------------------------------ */

extern struct osp__registry osp__the_registry;
/* Nonzero while sampling (set after boot succeeds, cleared at exit and in a forked child). */
int osp__is_active(void);
/* The pid that booted the profiler (0 before). */
pid_t osp__boot_pid(void);
/* Record objects loaded since the last look (dl_iterate_phdr; never with the registry lock
 * held). Runs on the program's own threads at moments they are in our code anyway: thread
 * registration and dlclose. */
void osp__images_refresh(void);

/* The guard (guard.c's wrappers, and boot's own naps on the program's thread): block SIGPROF on
 * this thread around a call a signal would cut short, if the guard applies (a registered thread,
 * profiling active, no SIGPROF handler of the program's, SIGPROF not already blocked); *old
 * receives the previous mask. Returns 1 when the caller must end the guard. Inline, so that in an
 * optimised build the wrapper is the only frame of ours between the wait and its caller (slot.c
 * leaves two frames out of a guarded wait's stack: osp__guard_wait_begin's and the wrapper's). */
static inline int osp__guard_begin(sigset_t *old)
{
    if (osp__tls_slot == NULL || !osp__is_active() || osp__sigprof_program_handles())
        return 0;
    sigset_t prof;
    sigemptyset(&prof);
    sigaddset(&prof, SIGPROF);
    if (osp__sigmask_raw(SIG_BLOCK, &prof, old) != 0) /* raw: not a mask the program set */
        return 0;
    if (sigismember(old, SIGPROF)) {
        osp__sigmask_raw(SIG_SETMASK, old, NULL);
        return 0;
    }
    osp__guard_wait_begin(osp__tls_slot);
    return 1;
}

/* End the guard osp__guard_begin began: write the wait, restore the mask (a signal of ours
 * held back lands now). errno is kept. */
static inline void osp__guard_end(int guarded, const sigset_t *old)
{
    if (!guarded)
        return;
    int saved = errno;
    struct osp__slot *s = osp__tls_slot;
    if (s != NULL)
        osp__guard_wait_end(s);
    osp__sigmask_raw(SIG_SETMASK, old, NULL);
    if (s != NULL)
        s->guard_leaving = 0;
    errno = saved;
}

/* Does a sleep of this length block (NULL: forever)? */
static inline int osp__timespec_blocks(const struct timespec *t)
{
    return t == NULL || t->tv_sec != 0 || t->tv_nsec != 0;
}

/* ---- control.c --------------------------------------------------------------------------- */

/* Before execve: stop ospreyd's signals and every CPU-time timer, wait until no round of
 * signals can still be under way, and take our SIGPROFs still pending on the calling thread
 * (they would outlive execve and kill the new program). */
void osp__exec_begin(void);
/* execve failed: signal again. */
void osp__exec_failed(void);
/* Take the SIGPROFs of ours pending on the calling thread (the program's own are sent again). */
void osp__take_pending_sigprof(void);
/* The program is about to send SIGPROF itself: pause our signals for good and wait (bounded)
 * until none of ours is in flight. */
void osp__sigprof_back_off(void);
/* Wait (at most ~50 ms) until ospreyd has finished two rounds of signals since the call: no
 * round that began before the caller's change of state can still be sending. Returns at once
 * when ospreyd is not attached. */
void osp__wait_for_round(void);

#endif /* OSP_BOOT_H */
