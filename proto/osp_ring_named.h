/* osp_ring_named.h — a ring by its name in /dev/shm, for a collector started apart.
 *
 * A program started with OSPREY_RING=NAME makes its ring the object
 * /dev/shm/osprey-ring-NAME (and its unwind tables /dev/shm/osprey-ring-NAME.unwind), this
 * user's only (0600), and starts no collector; `ospreyd --attach-ring NAME --out PATH` opens
 * both by these names (the shim: shim/shm.c; ospreyd: daemon/ring-named.c). The ring takes its
 * name only once its header is written: it is made as NAME.new, then renamed without replacing
 * (renameat2 RENAME_NOREPLACE), so a collector never maps a ring half made.
 */
#ifndef OSP_RING_NAMED_H
#define OSP_RING_NAMED_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "osp_ring.h"

#define OSP_RING_NAMED_DIR    "/dev/shm/"
#define OSP_RING_NAMED_PREFIX "osprey-ring-"
/* The longest NAME: "/osprey-ring-NAME" is the ring's name (OSP_RING_NAME_SIZE). */
#define OSP_RING_NAMED_MAX (OSP_RING_NAME_SIZE - sizeof "/" OSP_RING_NAMED_PREFIX)

/* /dev/shm/osprey-ring-NAME<suffix> into out; -EINVAL when NAME is not 1..OSP_RING_NAMED_MAX
 * letters, digits, '-' or '_', -ENAMETOOLONG when out is too small. */
static inline int osp_ring_named_path(char *out, size_t size, const char *name, const char *suffix)
{
    size_t n = strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
    if (n == 0 || name[n] != '\0' || n > OSP_RING_NAMED_MAX)
        return -EINVAL;
    int written =
        snprintf(out, size, "%s%s%s%s", OSP_RING_NAMED_DIR, OSP_RING_NAMED_PREFIX, name, suffix);
    return written > 0 && (size_t)written < size ? 0 : -ENAMETOOLONG;
}

#endif /* OSP_RING_NAMED_H */
