/* shm.c — the shared memory of a profiled image.
 *
 * Owns the ring (a memfd: header, event ring, slot rings; proto/osp_ring.h) and its writer,
 * the unwind tables' memfd (proto/osp_unwind.h), the process's image table and its lock, and
 * every descriptor meant for the collector until it has been handed over (ring, switch
 * events, forks' socket, tables, run's lock), then closed. Nothing here starts a process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "osp_base.h"
#include "osp_boot.h"
#include "osp_core.h"
#include "osp_ring_named.h"
#include "osp_unwind.h"

/* The event ring carries thread, image and exit records, and the waits still open at exit;
 * samples go to each thread's own slot ring. */
#define OSP__EVENT_RING_SIZE (1u << 20)

_Atomic int osp__registry_ready;
struct osp_ring_header *osp__ring_header;
size_t osp__ring_bytes;
struct osp__event_ring osp__events;
struct osp__images osp__image_table;
pthread_mutex_t osp__images_lock = PTHREAD_MUTEX_INITIALIZER;
char osp__shm_name[OSP_RING_NAME_SIZE];
int osp__ring_fd = -1;
int osp__forks_fd = -1;
int osp__unwind_fd = -1;
int osp__switch_fds[OSP_MAX_SWITCH_FDS];
int osp__switch_count;
void *osp__unwind_map = MAP_FAILED;

/* A forked child's slot rings: sixteen times an image's. Its pages are touched only as they
 * are written (the ring is sparse), and a server's forked workers each have a collector of
 * their own, which a loaded machine lets run less often (shim/README.md, "Measuring"). */
#define OSP__FORK_SLOT_RING (16u * OSP_SLOT_RING_SIZE)

/* The pool of stack copies after the slot table (proto/osp_ring.h, "Stack copies"): 32 buffers
 * of OSP__COPY_BYTES, 1 MiB (shim/README.md, "Stack copies while rows are built": 8, 16, 32,
 * 64 and 128 KiB measured; clang-14's stacks outgrow 16; a copy that fills its 32 is read on
 * by ospreyd from the live stack). */
#ifndef OSP__COPY_BYTES
#define OSP__COPY_BYTES (32u << 10)
#endif
#ifndef OSP__COPY_COUNT
#define OSP__COPY_COUNT 32u
#endif
_Static_assert(OSP__COPY_BYTES % 4096u == 0 && OSP__COPY_BYTES <= OSP_COPY_MAX_SIZE, "copy size");
_Static_assert(OSP__COPY_COUNT <= OSP_COPY_MAX_COUNT, "copy count");

static size_t slots_end(uint32_t slot_ring)
{
    return OSP_RING_HEADER_SIZE + OSP__EVENT_RING_SIZE +
           (size_t)OSP_DEFAULT_SLOTS * osp_slot_stride(slot_ring);
}

static size_t ring_size(uint32_t slot_ring)
{
    return slots_end(slot_ring) + (size_t)OSP__COPY_COUNT * OSP__COPY_BYTES;
}

/* The header of a ring just mapped, and the event ring's writer on it. */
static void ring_init(void *map, uint32_t rate_hz, uint32_t slot_ring)
{
    osp__ring_header = map;
    osp__event_ring_init_header(osp__ring_header, OSP__EVENT_RING_SIZE, rate_hz, osp__unix_ns(),
                                osp__mono_ns());
    osp__ring_header->slots_offset = OSP_RING_HEADER_SIZE + OSP__EVENT_RING_SIZE;
    osp__ring_header->slot_count = OSP_DEFAULT_SLOTS;
    osp__ring_header->slot_ring_size = slot_ring;
    osp__ring_header->signal_cookie = (uint64_t)(uintptr_t)osp__sigprof_cookie();
    osp__ring_header->copies_offset = slots_end(slot_ring);
    osp__ring_header->copy_count = OSP__COPY_COUNT;
    osp__ring_header->copy_size = OSP__COPY_BYTES;
    /* Its producers wake a collector that naps (event_ring.c, proto/osp_ring.h). */
    osp__ring_header->ring_flags = OSP_RING_WAKES;
    osp__event_ring_attach(&osp__events, osp__ring_header);
}

/* With OSPREY_RING=NAME, /dev/shm/osprey-ring-NAME<suffix> (proto/osp_ring_named.h): this
 * user's only (0600), never an object already there (O_EXCL) nor through a link. */
static pid_t named_by; /* the process that made the names: a vfork child shares this memory */

static int named_path(char *out, size_t size, const char *suffix)
{
    return osp_ring_named_path(out, size, osp__boot_env.ring, suffix);
}

/* A memfd named `name`, or with OSPREY_RING the object of `suffix` (named_path). */
static int object_create(const char *name, const char *suffix)
{
    char path[128];
    long fd = !osp__boot_env.has_ring ? osp__sys(SYS_memfd_create, (long)name, MFD_CLOEXEC, 0, 0, 0)
              : named_path(path, sizeof path, suffix) != 0
                  ? (errno = ENAMETOOLONG, -1)
                  : osp__sys(SYS_openat, AT_FDCWD, (long)path,
                             O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600, 0);
    if (fd >= 0 && osp__boot_env.has_ring)
        named_by = getpid();
    return fd < 0 ? -errno : (int)fd;
}

int osp__ring_publish(void)
{
    char from[128], to[128];
    int err = named_path(from, sizeof from, ".new") == 0 && named_path(to, sizeof to, "") == 0
                  ? 0
                  : -ENAMETOOLONG;
    /* The collector may map it as soon as it has this name: the header is written already. */
    if (err == 0 &&
        osp__sys(SYS_renameat2, AT_FDCWD, (long)from, AT_FDCWD, (long)to, RENAME_NOREPLACE) != 0)
        err = -errno;
    if (err != 0) {
        osp__sys(SYS_unlinkat, AT_FDCWD, (long)from, 0, 0, 0);
        if (named_path(to, sizeof to, ".unwind") == 0 && osp__unwind_fd >= 0)
            osp__sys(SYS_unlinkat, AT_FDCWD, (long)to, 0, 0, 0);
        osp__shm_name[0] = '\0'; /* nothing of ours to unlink any more */
    }
    return err;
}

int osp__ring_unlink(void)
{
    static int taken = -1; /* once removed: whether a collector had removed the ring's name */
    char path[128];
    /* A forked child's name is empty (fork.c), as is one that found the name taken; a vfork
     * child about to exec shares ours, not its pid. */
    if (!osp__boot_env.has_ring || osp__shm_name[0] == '\0' || getpid() != named_by)
        return 0;
    if (taken >= 0)
        return taken;
    if (named_path(path, sizeof path, ".new") == 0)
        osp__sys(SYS_unlinkat, AT_FDCWD, (long)path, 0, 0, 0);
    /* Gone already: a collector opened the ring (and removed its names) before we got here. */
    taken = named_path(path, sizeof path, "") == 0 &&
            osp__sys(SYS_unlinkat, AT_FDCWD, (long)path, 0, 0, 0) != 0 && errno == ENOENT;
    if (osp__unwind_map != MAP_FAILED && named_path(path, sizeof path, ".unwind") == 0)
        osp__sys(SYS_unlinkat, AT_FDCWD, (long)path, 0, 0, 0);
    return taken;
}

/* The ring: a memfd (nothing named in /dev/shm, so nothing is left behind however the
 * program or ospreyd ends, and a small /dev/shm — a container's 64 MiB — is no limit), handed
 * to ospreyd by descriptor; shm_name only names it (in the maps, for ospreyd's checks).
 * `reserve`: every page allocated now, so that a memory limit is met here, with one line,
 * rather than when a page is first touched; a descendant's stays sparse (see "Forked
 * children" in proto/osp_ring.h: it touches a few dozen pages, and a process start must be
 * cheap), with slot rings sixteen times larger. */
int osp__ring_create(uint32_t rate_hz, uint64_t random_bits, int reserve)
{
    if (osp__boot_env.has_ring)
        snprintf(osp__shm_name, sizeof(osp__shm_name), "/osprey-ring-%.50s", osp__boot_env.ring);
    else
        snprintf(osp__shm_name, sizeof(osp__shm_name), "/osprey-%d-%016llx", (int)getpid(),
                 (unsigned long long)random_bits);
    /* Named as the ring is, so that ospreyd finds it in the process's maps; with OSPREY_RING
     * under a temporary name until its header is written (osp__ring_publish). */
    int fd = object_create(osp__shm_name + 1, ".new");
    if (fd == -EEXIST) { /* another start of the same name, now or killed while it made it */
        osp__warn("/dev/shm/osprey-ring-%s.new is there already (OSPREY_RING): profiling is off",
                  osp__boot_env.ring);
        return -ECANCELED;
    }
    if (fd < 0)
        return fd;
    uint32_t slot_ring = reserve ? OSP_SLOT_RING_SIZE : OSP__FORK_SLOT_RING;
    osp__ring_bytes = ring_size(slot_ring);
    int err = ftruncate(fd, (off_t)osp__ring_bytes) == 0 ? 0 : -errno;
    if (err == 0 && reserve)
        err = -posix_fallocate(fd, 0, (off_t)osp__ring_bytes);
    if (err == -ENOSPC || err == -ENOMEM) {
        osp__warn("cannot reserve %zu KiB of memory for the profiler's ring (%s); profiling is "
                  "off",
                  osp__ring_bytes >> 10, strerror(-err));
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
        return -ECANCELED;
    }
    void *map = MAP_FAILED;
    if (err == 0) {
        map = mmap(NULL, osp__ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
            err = -errno;
    }
    if (err) {
        osp__sys(SYS_close, fd, 0, 0, 0, 0);
        return err;
    }
    osp__ring_fd = fd;
    ring_init(map, rate_hz, slot_ring);
    osp__ring_header->parent_pid = (int32_t)getppid();
    return 0;
}

/* The unwind tables' object (proto/osp_unwind.h): a memfd, sparse, its header written
 * through the file, mapped read-only. It has no name, so nothing can be left behind in
 * /dev/shm whatever becomes of the program or of ospreyd (which gets the descriptor at spawn,
 * as --unwind-fd N). Without it (no room for even the header, too little address space) the
 * stacks come from frame pointers alone, and one line says so. */
void osp__unwind_create(void)
{
    int fd = object_create("osprey-unwind", ".unwind");
    int err = fd < 0 ? fd : 0;
    struct osp_unwind_header h;
    osp_unwind_header_init(&h, OSP_UNWIND_DEFAULT_SIZE, OSP__CPU_ELF_MACHINE);
    if (err == 0 && ftruncate(fd, (off_t)OSP_UNWIND_DEFAULT_SIZE) != 0)
        err = -errno;
    /* The header's page is reserved: it is the one page the program reads before ospreyd
     * writes anything. */
    if (err == 0)
        err = -posix_fallocate(fd, 0, OSP_UNWIND_HEADER_SIZE);
    if (err == 0 && pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
        err = -EIO;
    if (err == 0) {
        osp__unwind_map = mmap(NULL, OSP_UNWIND_DEFAULT_SIZE, PROT_READ, MAP_SHARED, fd, 0);
        if (osp__unwind_map == MAP_FAILED)
            err = -errno;
    }
    if (err) {
        if (fd >= 0)
            osp__sys(SYS_close, fd, 0, 0, 0, 0);
        osp__warn("cannot create the unwind tables (%s); stacks follow frame pointers only",
                  strerror(-err));
        return;
    }
    osp__unwind_fd = fd;
    osp__unwind_set_tables(osp__unwind_map, OSP_UNWIND_DEFAULT_SIZE);
}

/* ospreyd holds its own descriptors now (or never will): ours go. */
void osp__handover_close(void)
{
    if (osp__unwind_fd >= 0)
        osp__sys(SYS_close, osp__unwind_fd, 0, 0, 0, 0);
    osp__unwind_fd = -1;
    /* and the switch events: ospreyd's now */
    osp__switches_close(osp__switch_fds, osp__switch_count);
    osp__switch_count = 0;
    if (osp__forks_fd >= 0)
        osp__sys(SYS_close, osp__forks_fd, 0, 0, 0, 0); /* and the forks' socket */
    osp__forks_fd = -1;
    /* and the ring's memfd: mapped, and theirs */
    if (osp__ring_fd >= 0)
        osp__sys(SYS_close, osp__ring_fd, 0, 0, 0, 0);
    osp__ring_fd = -1;
    if (osp__run_lock_fd >= 0)
        osp__sys(SYS_close, osp__run_lock_fd, 0, 0, 0, 0); /* and the run's lock */
    osp__run_lock_fd = -1;
}

static void unwind_destroy(void)
{
    osp__unwind_set_tables(NULL, 0);
    if (osp__unwind_map != MAP_FAILED) {
        munmap(osp__unwind_map, OSP_UNWIND_DEFAULT_SIZE);
        osp__unwind_map = MAP_FAILED;
    }
    osp__handover_close();
}

void osp__ring_destroy(void)
{
    osp__ring_unlink();
    unwind_destroy();
    if (osp__ring_header) {
        munmap(osp__ring_header, osp__ring_bytes);
        osp__ring_header = NULL;
    }
    osp__shm_name[0] = '\0';
    if (osp__ring_fd >= 0)
        osp__sys(SYS_close, osp__ring_fd, 0, 0, 0, 0);
    osp__ring_fd = -1;
}
