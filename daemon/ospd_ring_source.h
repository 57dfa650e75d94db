/* ospd_ring_source.h — the shim's rings as a source of the collector's session
 * (ring-source.c): a launched program's shared-memory ring, its threads' sample rings, the
 * kernel's context switches it handed over, and its forked children's greetings. */
#ifndef OSPD_RING_SOURCE_H
#define OSPD_RING_SOURCE_H

#include <stdbool.h>

#include "ospd_session.h"

/* What ospreyd's command line says of the ring (ospreyd.c, usage; written by
 * proto/osp_daemon_args.h). */
struct ospd_ring_options {
    const char *ring_name;       /* --ring-name: the ring's name, which its children greet */
    const char *out_path;        /* absolute */
    const char *export_formats;  /* --export: outputs to write after the raw file, or NULL */
    char self[OSP_MAX_PATH + 1]; /* this executable, for the forked children's collectors */
    int unwind_fd;               /* --unwind-fd: the shim's unwind tables (a memfd), or -1 */
    const int *switch_fds;       /* --switch-fd, once a CPU: the kernel's context-switch events */
    int switch_count;
    int ring_fd;  /* --ring-fd N: the program's ring (a memfd) */
    int forks_fd; /* --forks-fd N: the socket the target's forked children greet, or -1 */
    int run_lock; /* the run's lock, held shared for this process's life, or -1 */
    /* The raw file written on libuv's pool, not the loop's thread (an image followed in a
     * collector's process, follow.c: the loop answers the others' greetings meanwhile). */
    bool publish_apart;
};

/* A ring source for ospd_session_run, or NULL when out of memory. */
void *ospd_ring_source_new(const struct ospd_ring_options *o);
extern const struct ospd_source_ops ospd_ring_source;
/* The attach in two halves (follow.c): the ring and the switch events mapped and answered
 * ATTACHED (any thread: mapping a dead task's switch events waits 15-23 ms for the kernel),
 * then the loop's handles started (the loop's thread). Each 0, or 1 after one line. */
int ospd_ring_source_map(void *source);
int ospd_ring_source_start(void *source, uv_loop_t *loop);

/* --attach-ring NAME (ring-named.c): the ring /dev/shm/osprey-ring-NAME, waited for up to
 * timeout_s seconds, and its unwind tables (-1 when there are none) opened, their names
 * removed; the ring's name ("/osprey-ring-NAME") into ring_name. 0, or -errno once one line
 * has said why. */
int ospd_ring_named_open(const char *name, double timeout_s, int *ring_fd, int *unwind_fd,
                         char *ring_name, size_t ring_name_size);

#endif /* OSPD_RING_SOURCE_H */
