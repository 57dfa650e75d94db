/* ring-named.c — `ospreyd --attach-ring NAME`: a program's ring found by its name.
 *
 * Owns opening /dev/shm/osprey-ring-NAME and its unwind tables (proto/osp_ring_named.h), which
 * a program started with OSPREY_RING=NAME made, waiting for the ring to appear (a collector
 * started before the program) up to a timeout, and removing both names once opened: from then
 * on the collector's descriptors keep the objects alive, nothing is left in /dev/shm however
 * the program ends, and no second collector attaches. What follows is the ring source's, as for
 * a ring handed over by descriptor (ring-source.c).
 *
 * Only a regular file of this user's (ospc_open_shared: no link, no FIFO, no object of another
 * user's, which /dev/shm lets anyone make under any name).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "osp_ring_named.h"
#include "ospc.h"
#include "ospd_ring_source.h"

int ospd_ring_named_open(const char *name, double timeout_s, int *ring_fd, int *unwind_fd,
                         char *ring_name, size_t ring_name_size)
{
    char path[128], tables[128];
    if (osp_ring_named_path(path, sizeof path, name, "") != 0 ||
        osp_ring_named_path(tables, sizeof tables, name, ".unwind") != 0) {
        fprintf(stderr,
                "osprey: ospreyd: --attach-ring %s: not a name of up to %zu letters, digits, "
                "'-' or '_'\n",
                name, (size_t)OSP_RING_NAMED_MAX);
        return -EINVAL;
    }
    uint64_t deadline = ospc_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(timeout_s * 1e9);
    int fd;
    /* Until the program has made it: every 20 ms, a delay no user sees beside a program's start. */
    while ((fd = ospc_open_shared(path, O_RDWR, 0, geteuid())) == -ENOENT &&
           ospc_clock_ns(CLOCK_MONOTONIC) < deadline) {
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (fd == -ENOENT) {
        fprintf(stderr,
                "osprey: ospreyd: no ring %s within %g s (start the program with "
                "OSPREY_RING=%s)\n",
                path, timeout_s, name);
        return fd;
    }
    if (fd < 0) {
        fprintf(stderr, "osprey: ospreyd: ring %s %s; not attached\n", path,
                ospc_shared_strerror(fd));
        return fd;
    }
    /* The tables are made before the ring takes its name: there now, or never. */
    int tables_fd = ospc_open_shared(tables, O_RDWR, 0, geteuid());
    if (tables_fd < 0 && tables_fd != -ENOENT)
        fprintf(stderr,
                "osprey: ospreyd: unwind tables %s %s; stacks follow frame pointers "
                "only\n",
                tables, ospc_shared_strerror(tables_fd));
    unlink(path);
    if (tables_fd >= 0)
        unlink(tables);
    snprintf(ring_name, ring_name_size, "/%s%s", OSP_RING_NAMED_PREFIX, name);
    *ring_fd = fd;
    *unwind_fd = tables_fd >= 0 ? tables_fd : -1;
    return 0;
}
