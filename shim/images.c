/* images.c — the list of loaded objects, for offline symbolization.
 *
 * Owns the scan of the loaded objects (dl_iterate_phdr), the image table built from it, and
 * the IMAGE records sent for it. For each object: its path (the main executable by its real
 * path, the vDSO as "[vdso]"; other entries without a path are skipped), its ELF load base,
 * its load bias (dlpi_addr), and the span of its PF_X PT_LOAD segments.
 *
 * The table is scanned and sent by whichever program thread registers, unloads an object or
 * exits, under shm.c's images lock. dl_iterate_phdr takes the dynamic loader's lock, so it
 * is never called with the registry lock held (a thread inside dlopen could be waiting for
 * the registry). An image is sent once; one that is unloaded and another that appears at the
 * same address with a different path or range is a new image.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "osp_core.h"

#define OSP__ARCH OSP__CPU_NAME

int osp__images_init(struct osp__images *im)
{
    memset(im, 0, sizeof(*im));
    ssize_t n = readlink("/proc/self/exe", im->exe_path, OSP_MAX_PATH);
    if (n <= 0)
        n = 0;
    im->exe_path[n] = '\0';
    return 0;
}

void osp__images_destroy(struct osp__images *im)
{
    for (size_t i = 0; i < im->count; i++) {
        free(im->items[i].path);
        free(im->items[i].loader_name);
    }
    free(im->items);
    memset(im, 0, sizeof(*im));
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    unsigned long long *out = data;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
        return 1;
    out[0] = info->dlpi_adds;
    out[1] = info->dlpi_subs;
    return 1; /* the counters are the same in every entry: stop at the first */
}

int osp__images_changed(struct osp__images *im)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(counters_cb, c);
    return c[0] != im->adds || c[1] != im->subs;
}

struct scan_ctx {
    struct osp__images *im;
    int first;
    int err;
};

static int same_image(const struct osp__image *a, uint64_t base, uint64_t text, uint64_t size,
                      const char *loader_name)
{
    return !a->gone && a->base == base && a->text == text && a->text_size == size &&
           strcmp(a->loader_name, loader_name) == 0;
}

/* The path an IMAGE record carries: absolute, because the exporters open it later from
 * another directory. A relative name (LD_PRELOAD=build/x.so, dlopen("./x.so")) is resolved
 * against the working directory now, when the object is first seen. Returns a malloc'd copy. */
static char *absolute_path(const char *name)
{
    if (name[0] == '/' || name[0] == '[')
        return strdup(name);
    char *resolved = realpath(name, NULL);
    return resolved != NULL ? resolved : strdup(name);
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    struct scan_ctx *ctx = data;
    struct osp__images *im = ctx->im;
    int first = ctx->first;
    ctx->first = 0;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
        im->adds = info->dlpi_adds;
        im->subs = info->dlpi_subs;
    }

    const char *path = info->dlpi_name;
    uint32_t flags = 0;
    uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
    uint64_t base = 0, text_lo = UINT64_MAX, text_hi = 0;
    int have_base = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (!have_base) {
            /* The first PT_LOAD maps the file from offset p_offset; the ELF header sits at
             * its start (vaddr - offset, page-aligned by the linker). */
            base = info->dlpi_addr + ph->p_vaddr - ph->p_offset;
            have_base = 1;
        }
        if (ph->p_flags & PF_X) {
            uint64_t lo = info->dlpi_addr + ph->p_vaddr;
            uint64_t hi = lo + ph->p_memsz;
            if (lo < text_lo)
                text_lo = lo;
            if (hi > text_hi)
                text_hi = hi;
        }
    }
    if (!have_base)
        return 0;
    if (first && (path == NULL || path[0] == '\0')) {
        path = im->exe_path;
        flags = OSP_IMAGE_MAIN;
    } else if (vdso != 0 && base == vdso) {
        path = "[vdso]";
    } else if (path == NULL || path[0] == '\0') {
        return 0;
    }
    uint64_t text = text_lo == UINT64_MAX ? 0 : text_lo;
    uint64_t text_size = text_lo == UINT64_MAX ? 0 : text_hi - text_lo;

    for (size_t i = 0; i < im->count; i++) {
        if (same_image(&im->items[i], base, text, text_size, path)) {
            im->items[i].seen = 1;
            return 0;
        }
    }
    if (im->count == im->capacity) {
        size_t cap = im->capacity ? im->capacity * 2 : 32;
        struct osp__image *items = realloc(im->items, cap * sizeof(*items));
        if (items == NULL) {
            ctx->err = -ENOMEM;
            return 1;
        }
        im->items = items;
        im->capacity = cap;
    }
    char *copy = absolute_path(path);
    char *loader_name = strdup(path);
    if (copy == NULL || loader_name == NULL) {
        free(copy);
        free(loader_name);
        ctx->err = -ENOMEM;
        return 1;
    }
    im->items[im->count++] = (struct osp__image){
        .base = base,
        .slide = info->dlpi_addr,
        .text = text,
        .text_size = text_size,
        .flags = flags,
        .seen = 1,
        .at_ns = im->scan_ns,
        .path = copy,
        .loader_name = loader_name,
    };
    return 0;
}

int osp__images_scan(struct osp__images *im)
{
    /* The first scan (the table is empty) finds what was there from the start: no time. */
    uint64_t now = osp__clock_ns(CLOCK_MONOTONIC);
    im->scan_ns = im->count > 0 ? now : 0;
    for (size_t i = 0; i < im->count; i++)
        im->items[i].seen = 0;
    struct scan_ctx ctx = {.im = im, .first = 1, .err = 0};
    dl_iterate_phdr(scan_cb, &ctx);
    if (ctx.err != 0)
        return ctx.err; /* a partial scan: nothing is known to be gone */
    now = osp__clock_ns(CLOCK_MONOTONIC);
    for (size_t i = 0; i < im->count; i++) {
        struct osp__image *img = &im->items[i];
        if (!img->seen && !img->gone) {
            img->gone = 1;
            img->at_ns = now;
            img->sent = 0;
        }
    }
    return 0;
}

/* A new ring (a forked child's): every image is to be sent to it again. */
void osp__images_unsend(struct osp__images *im)
{
    for (size_t i = 0; i < im->count; i++)
        im->items[i].sent = 0;
}

/* Sends one image record; marks the image sent when the ring took it. */
static void emit_one(struct osp__image *img, struct osp__event_ring *w)
{
    size_t len = strnlen(img->path, OSP_MAX_PATH);
    struct osp_rec_image rec = {
        .base = img->base,
        .slide = img->slide,
        .text = img->text,
        .text_size = img->text_size,
        .flags = img->flags | (img->gone ? OSP_IMAGE_UNLOADED : 0),
        .path_len = (uint32_t)len,
        .at_mono_ns = img->at_ns,
    };
    strncpy(rec.arch, OSP__ARCH, sizeof(rec.arch));
    if (osp__event_ring_write(w, OSP_REC_IMAGE, &rec, sizeof(rec), img->path, (uint32_t)len) == 0)
        img->sent = 1;
}

/* Called with the registry lock held. An unloaded image, once sent, leaves the table. */
void osp__images_emit(struct osp__images *im, struct osp__event_ring *w)
{
    size_t kept = 0;
    for (size_t i = 0; i < im->count; i++) {
        struct osp__image *img = &im->items[i];
        if (!img->sent)
            emit_one(img, w);
        if (img->gone && img->sent) {
            free(img->path);
            free(img->loader_name);
            continue;
        }
        im->items[kept++] = *img;
    }
    im->count = kept;
}
