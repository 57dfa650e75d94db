/* unwind-cache.c — the rows of an object kept between runs, by build id: a cache file is a
 * header naming what the rows were built from, then the rows; one that fails its checks is
 * refused (and rebuilt by unwind-table.c), and the directory is kept under CACHE_LIMIT.
 * Written to a temporary file renamed into place (a cache: no fsync).
 */
#include <dirent.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "ospd.h"
#include "ospd_cfi.h"
#include "ospd_unwind.h"
#include "ospd_unwind_cache.h"

#define CACHE_MAGIC UINT64_C(0x3253574f5250534f) /* "OSPROWS2" */
#define CACHE_VERSION                                                                              \
    5u /* 3: .debug_frame's rows in .eh_frame's gaps; 4: OSP_CFA_REG rows;                         \
        * 5: OSP_CFA_DEREF rows */
#define CACHE_LIMIT (UINT64_C(256) << 20) /* the cache directory's size bound */

void ospd_unwind_frames_identity(Elf *elf, struct frames_identity *out)
{
    out->size = 0;
    out->hash = OSPC_HASH_SEED;
    size_t shstrndx;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr sh;
        const char *name;
        if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type == SHT_NOBITS ||
            (name = elf_strptr(elf, shstrndx, sh.sh_name)) == NULL ||
            (strcmp(name, ".eh_frame") != 0 && strcmp(name, ".eh_frame_hdr") != 0 &&
             strcmp(name, ".debug_frame") != 0))
            continue;
        Elf_Data *data = elf_rawdata(scn, NULL);
        out->hash = ospc_hash_bytes(out->hash, name, strlen(name) + 1);
        if (data != NULL && data->d_buf != NULL) {
            out->hash = ospc_checksum(out->hash, data->d_buf, data->d_size);
            out->size += data->d_size;
        }
    }
}

static uint64_t cache_checksum(const struct cache_header *h, const struct osp_unwind_row *rows)
{
    struct cache_header copy = *h;
    copy.checksum = 0;
    uint64_t hash = ospc_hash_bytes(OSPC_HASH_SEED, &copy, sizeof copy);
    return ospc_checksum(hash, rows, (size_t)h->count * sizeof *rows);
}

void ospd_unwind_cache_header(struct cache_header *h, const char *build_id, uint16_t machine,
                              const struct frames_identity *frames, uint64_t lo, uint64_t hi)
{
    memset(h, 0, sizeof *h);
    h->magic = CACHE_MAGIC;
    h->version = CACHE_VERSION;
    h->row_size = sizeof(struct osp_unwind_row);
    h->start_vaddr = lo;
    h->end_vaddr = hi;
    h->machine = machine;
    h->frames_size = frames->size;
    h->frames_hash = frames->hash;
    snprintf(h->build_id, sizeof h->build_id, "%s", build_id);
}

static int read_exactly(int fd, void *buffer, size_t size, off_t offset)
{
    for (size_t done = 0; done < size;) {
        ssize_t got = pread(fd, (char *)buffer + done, size - done, offset + (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -EPROTO;
        done += (size_t)got;
    }
    return 0;
}

/* The rows of `name` in the cache directory: 0 when it is a regular file of ours, whole, of
 * the object `want` describes (count 0: any), and its checksum holds. */
int ospd_unwind_cache_load(int dir, const char *name, const struct cache_header *want,
                           struct ospd_unwind_rows *out)
{
    struct stat st;
    int fd = ospc_private_open(dir, name, &st);
    if (fd < 0)
        return fd;
    struct cache_header h;
    int rc = -EPROTO;
    if (read_exactly(fd, &h, sizeof h, 0) == 0 && h.magic == want->magic &&
        h.version == want->version && h.row_size == want->row_size && h.machine == want->machine &&
        h.start_vaddr == want->start_vaddr && h.end_vaddr == want->end_vaddr &&
        h.frames_size == want->frames_size && h.frames_hash == want->frames_hash &&
        memcmp(h.build_id, want->build_id, sizeof h.build_id) == 0 && h.count > 0 &&
        h.count <= OSPD_UNWIND_MAX_ROWS &&
        (uint64_t)st.st_size == sizeof h + (uint64_t)h.count * sizeof *out->rows) {
        out->rows = malloc((size_t)h.count * sizeof *out->rows);
        if (out->rows == NULL) {
            rc = -ENOMEM;
        } else if (read_exactly(fd, out->rows, (size_t)h.count * sizeof *out->rows, sizeof h) ==
                       0 &&
                   cache_checksum(&h, out->rows) == h.checksum) {
            rc = 0;
            for (uint32_t i = 1; i < h.count && rc == 0; i++)
                if (out->rows[i].pc_offset <= out->rows[i - 1].pc_offset)
                    rc = -EPROTO;
        }
        if (rc == 0) {
            out->count = h.count;
            out->start_vaddr = h.start_vaddr;
            out->end_vaddr = h.end_vaddr;
        } else {
            free(out->rows);
            out->rows = NULL;
        }
    }
    close(fd);
    return rc;
}

/* The oldest files go first once the directory holds more than CACHE_LIMIT: only regular
 * files of ours in it, never through a link. Best effort. */
static void cache_prune(int dir)
{
    int listing_fd = dup(dir);
    DIR *d = listing_fd >= 0 ? fdopendir(listing_fd) : NULL;
    if (d == NULL) {
        if (listing_fd >= 0)
            close(listing_fd);
        return;
    }
    rewinddir(d);
    struct entry {
        char name[96];
        time_t mtime;
        off_t size;
    } *entries = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st;
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof entries->name ||
            fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if (n == cap) {
            struct entry *grown = realloc(entries, (cap ? cap * 2 : 64) * sizeof *entries);
            if (grown == NULL)
                break;
            entries = grown;
            cap = cap ? cap * 2 : 64;
        }
        snprintf(entries[n].name, sizeof entries[n].name, "%s", e->d_name);
        entries[n].mtime = st.st_mtime;
        entries[n].size = st.st_size;
        total += (uint64_t)st.st_size;
        n++;
    }
    while (total > CACHE_LIMIT && n > 0) {
        size_t oldest = 0;
        for (size_t i = 1; i < n; i++)
            if (entries[i].mtime < entries[oldest].mtime)
                oldest = i;
        unlinkat(dir, entries[oldest].name, 0);
        total -= (uint64_t)entries[oldest].size;
        entries[oldest] = entries[--n];
    }
    free(entries);
    closedir(d);
}

/* Keep rows for the next run: a temporary file renamed into place (a cache: no fsync). */
void ospd_unwind_cache_store(int dir, const char *name, struct cache_header *h,
                             const struct ospd_unwind_rows *rows)
{
    char temp[NAME_MAX + 1];
    int fd = ospc_private_temp(dir, name, temp, sizeof temp);
    if (fd < 0)
        return;
    h->count = rows->count;
    h->checksum = cache_checksum(h, rows->rows);
    int ok = ospc_write_all(fd, h, sizeof *h) == 0 &&
             ospc_write_all(fd, rows->rows, (size_t)rows->count * sizeof *rows->rows) == 0;
    if (ospc_private_commit(dir, fd, temp, name, ok) == 0)
        cache_prune(dir);
}
