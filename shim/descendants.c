/* descendants.c — what a descendant's new image needs to find the profile it belongs to.
 *
 * Owns OSPREY_PROFILE_ROOT_PID (the process that started profiling: descendants write
 * "<out>.<pid>.json" beside its profile) and OSPREY_PROFILE_LAST_PID (the latest image that
 * booted in this process: an image that replaces it by exec writes "<out>.<pid>-<random>.json")
 * and OSPREY_PROFILE_GREET ("<uid>:<ring>": the collector a new image greets with its ring
 * instead of starting one, start.c), and hands on OSPREY_PROFILE_SECCOMP (what the filter this
 * image booted under kills, seccomp.c).
 * Boot takes both out of the program's environment, so the program never sees them; the exec
 * and spawn interposers add them only to the environment they hand to a new image that will be
 * profiled (OSPREY_PROFILE or OSPREY_RING set in it; with OSPREY_RING they only tell a new
 * image it is not the ring's, boot.c), built on the caller's stack: exec runs in forked
 * children of threaded programs, where malloc's lock may be held by a thread that is gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osp_boot.h"
#include "osp_core.h"

static char root_entry[48], last_entry[48]; /* static: still there in a forked child */
static char greet_entry[48 + OSP_RING_NAME_SIZE];
static char greet_ring[OSP_RING_NAME_SIZE];
static long root_kept;

void osp__greet_set(const char *ring)
{
    greet_entry[0] = '\0';
    greet_ring[0] = '\0';
    if (ring != NULL && ring[0] != '\0') {
        snprintf(greet_entry, sizeof greet_entry, "OSPREY_PROFILE_GREET=%u:%s", (unsigned)getuid(),
                 ring);
        snprintf(greet_ring, sizeof greet_ring, "%s", ring);
    }
}

const char *osp__greet_ring(void)
{
    return greet_ring[0] != '\0' ? greet_ring : NULL;
}

/* Is the greeting entry handed on? Whenever there is one: this image's own collector, a
 * forked child's parent's, and in a forked child not profiled (its ring let go), its parent's
 * entry as it was. Even a collector still starting: the new image then waits for its answer
 * through the rest of that start (once: 1-3 ms, 3-15 ms at load 8 on 2 cores), and that
 * collector follows it and every image after it in its own process (daemon/follow.c), where
 * a collector of its own, not waited for, made one ospreyd process per image of a chain that
 * execs at once (the collector's start is most of what an image costs). Async-signal-safe:
 * exec runs in forked children. */
static int greet_handed_on(void)
{
    return greet_entry[0] != '\0';
}

void osp__bookkeeping_set(long root_pid, long last_pid)
{
    root_kept = root_pid;
    snprintf(root_entry, sizeof root_entry, "OSPREY_PROFILE_ROOT_PID=%ld", root_pid);
    snprintf(last_entry, sizeof last_entry, "OSPREY_PROFILE_LAST_PID=%ld", last_pid);
}

size_t osp__env_count(char *const envp[])
{
    size_t n = 0;
    while (envp != NULL && envp[n] != NULL)
        n++;
    return n;
}

char *const *osp__env_with_bookkeeping(char *const envp[], size_t n, char **store)
{
    int profiled = 0;
    for (size_t i = 0; i < n && !profiled; i++)
        profiled = strncmp(envp[i], "OSPREY_PROFILE=", 15) == 0 ||
                   strncmp(envp[i], "OSPREY_RING=", 12) == 0;
    if (!profiled || root_entry[0] == '\0')
        return envp;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], "OSPREY_PROFILE_ROOT_PID=", 24) != 0 &&
            strncmp(envp[i], "OSPREY_PROFILE_LAST_PID=", 24) != 0 &&
            strncmp(envp[i], "OSPREY_PROFILE_GREET=", 21) != 0 &&
            strncmp(envp[i], "OSPREY_PROFILE_SECCOMP=", 23) != 0)
            store[k++] = envp[i];
    store[k++] = root_entry;
    store[k++] = last_entry;
    if (greet_handed_on())
        store[k++] = greet_entry;
    const char *seccomp = osp__seccomp_entry();
    if (seccomp != NULL) /* static: seccomp.c's, set once at boot */
        store[k++] = (char *)seccomp;
    store[k] = NULL;
    return store;
}

void osp__exec_naming(int begin)
{
    struct osp_ring_header *h = osp__header;
    if (h == NULL || !(h->ring_flags & OSP_RING_FORKED) || root_entry[0] == '\0')
        return;
    osp__mutex_lock(&osp__the_registry.lock);
    int recorded = osp__registry_recorded(&osp__the_registry);
    pthread_mutex_unlock(&osp__the_registry.lock);
    osp__bookkeeping_set(root_kept, begin && !recorded ? 0 : (long)getpid());
}

static int preloaded_here;

void osp__escape_set_preloaded(int preloaded)
{
    preloaded_here = preloaded;
}

int osp__env_escapes(char *const envp[])
{
    int profiled = 0, preloaded = 0;
    for (size_t i = 0; envp != NULL && envp[i] != NULL; i++) {
        profiled = profiled || strncmp(envp[i], "OSPREY_PROFILE=", 15) == 0;
        preloaded = preloaded || (strncmp(envp[i], "LD_PRELOAD=", 11) == 0 &&
                                  strstr(envp[i], "libospreyprof") != NULL);
    }
    if (!profiled)
        return OSP_ESCAPE_ENVIRONMENT;
    return preloaded_here && !preloaded ? OSP_ESCAPE_PRELOAD : 0;
}

void osp__note_escape(long pid, const char *path, char *const envp[])
{
    /* Relaxed: a one-way flag; inside a sandbox not even getpid (control.c). */
    if (!osp__is_active() || atomic_load_explicit(&osp__sandboxed, memory_order_relaxed) ||
        getpid() != osp__boot_pid() || osp__the_registry.ring == NULL)
        return;
    if (pid == 0)
        pid = (long)getpid();
    int reason = osp__env_escapes(envp);
    if (reason == 0)
        return;
    if (path == NULL)
        path = "";
    size_t len = strnlen(path, OSP_MAX_PATH);
    struct osp_rec_escaped rec = {
        .pid = (int32_t)pid, .reason = (uint32_t)reason, .path_len = (uint32_t)len};
    osp__mutex_lock(&osp__the_registry.lock);
    if (!osp__the_registry.stopped &&
        osp__event_ring_write(osp__the_registry.ring, OSP_REC_ESCAPED, &rec, sizeof rec, path,
                              (uint32_t)len) == 0 &&
        osp__header != NULL)
        atomic_fetch_add_explicit(&osp__header->escapes, 1, memory_order_relaxed);
    pthread_mutex_unlock(&osp__the_registry.lock);
}

int osp__bookkeeping_export(void)
{
    if (root_entry[0] == '\0' ||
        (getenv("OSPREY_PROFILE") == NULL && getenv("OSPREY_RING") == NULL))
        return 0;
    putenv(root_entry);
    putenv(last_entry);
    if (greet_handed_on())
        putenv(greet_entry);
    if (osp__seccomp_entry() != NULL)
        putenv((char *)osp__seccomp_entry()); /* static: seccomp.c's */
    return 1;
}

void osp__bookkeeping_withdraw(int exported)
{
    if (exported) {
        unsetenv("OSPREY_PROFILE_ROOT_PID");
        unsetenv("OSPREY_PROFILE_LAST_PID");
        unsetenv("OSPREY_PROFILE_GREET");
        unsetenv("OSPREY_PROFILE_SECCOMP");
    }
}
