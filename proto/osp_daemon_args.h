/* osp_daemon_args.h — the one writer of the command line a collector is started with: the
 * shim starts ospreyd for a program (shim/spawn.c), ospreyd starts one for a forked child
 * (daemon/forks.c), and both hand it the same descriptors, each named by its role:
 *
 *   ospreyd --ring-fd FD --ring-name NAME --out PATH [--detached] [--switch-fd FD]...
 *           [--forks-fd FD] [--unwind-fd FD] [--run-lock-fd FD] [--export LIST]
 *
 * one --switch-fd per CPU's context-switch events. ospreyd reads it (daemon/ospreyd.c); what
 * each descriptor holds is in daemon/ospd_ring_source.h. No allocation, no locale: the numbers
 * are written by hand into the struct, so the shim may build it anywhere it may call it.
 */
#ifndef OSP_DAEMON_ARGS_H
#define OSP_DAEMON_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "osp_ring.h"

/* The descriptors handed over, by role, as the new process will see them; -1 where absent. */
struct osp_daemon_fds {
    int ring;
    int switches[OSP_MAX_SWITCH_FDS];
    int switch_count;
    int forks;
    int unwind;
    int run_lock;
};

/* ring, name, out, detached, export: 9 words; two per descriptor; the closing NULL. */
#define OSP_DAEMON_ARGV_MAX (10 + 2 * (4 + OSP_MAX_SWITCH_FDS))

struct osp_daemon_args {
    char *argv[OSP_DAEMON_ARGV_MAX];
    char numbers[4 + OSP_MAX_SWITCH_FDS][12];
    int argc, used;
};

static inline void osp_daemon_args_put(struct osp_daemon_args *a, const char *option,
                                       const char *value)
{
    a->argv[a->argc++] = (char *)option;
    if (value != NULL)
        a->argv[a->argc++] = (char *)value;
}

/* `option FD`, with FD written in decimal; nothing when fd is negative. */
static inline void osp_daemon_args_fd(struct osp_daemon_args *a, const char *option, int fd)
{
    if (fd < 0)
        return;
    char reversed[12], *text = a->numbers[a->used++];
    int n = 0, i = 0;
    do {
        reversed[n++] = (char)('0' + fd % 10);
        fd /= 10;
    } while (fd > 0);
    while (n > 0)
        text[i++] = reversed[--n];
    text[i] = '\0';
    osp_daemon_args_put(a, option, text);
}

/* Fill `a` (argv[0] "ospreyd", NULL-terminated) for these descriptors. `detached`: the caller
 * starts it in the background already (a process group of its own, no fork); export: NULL or
 * the --export list. */
static inline void osp_daemon_args_build(struct osp_daemon_args *a,
                                         const struct osp_daemon_fds *fds, const char *ring_name,
                                         const char *out_path, bool detached,
                                         const char *export_formats)
{
    a->argc = 0;
    a->used = 0;
    osp_daemon_args_put(a, "ospreyd", NULL);
    osp_daemon_args_fd(a, "--ring-fd", fds->ring);
    osp_daemon_args_put(a, "--ring-name", ring_name);
    osp_daemon_args_put(a, "--out", out_path);
    if (detached)
        osp_daemon_args_put(a, "--detached", NULL);
    for (int i = 0; i < fds->switch_count && i < (int)OSP_MAX_SWITCH_FDS; i++)
        osp_daemon_args_fd(a, "--switch-fd", fds->switches[i]);
    osp_daemon_args_fd(a, "--forks-fd", fds->forks);
    osp_daemon_args_fd(a, "--unwind-fd", fds->unwind);
    osp_daemon_args_fd(a, "--run-lock-fd", fds->run_lock);
    if (export_formats != NULL)
        osp_daemon_args_put(a, "--export", export_formats);
    a->argv[a->argc] = NULL;
}

#endif /* OSP_DAEMON_ARGS_H */
