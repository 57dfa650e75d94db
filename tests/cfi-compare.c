/* cfi-compare.c — the CFI-to-rows translator (daemon/cfi-rows.c) against libdw's rows, on real
 * objects: the test's sampled comparison (test-cfi.c) and the full one of bench/unwind
 * (cfi-compare-main.c).
 *
 * Full: both builders' tables of an object, row for row (the rows are canonical: equal rules
 * merged, so two builders that give every address the same row give the same table), and the
 * CPU time each took. Sampled: the translator's table, against libdw's row at a sample of
 * addresses (dwarf_cfi_addrframe at each, translated as libdw's builder translates it): the
 * start of randomly chosen rows, the byte before it, and addresses anywhere in the code;
 * where `.eh_frame`'s row is UNKNOWN, `.debug_frame`'s (the rows fill those ranges from it).
 */
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cfi-compare.h"
#include "ospd_cfi.h"
#include "ospd_unwind_source.h"

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const struct osp_unwind_row *row_at(const struct ospd_unwind_rows *r, uint32_t offset)
{
    uint32_t l = 0, h = r->count;
    while (l < h) {
        uint32_t mid = l + (h - l) / 2;
        if (r->rows[mid].pc_offset <= offset)
            l = mid + 1;
        else
            h = mid;
    }
    return l == 0 ? NULL : &r->rows[l - 1];
}

static bool same_rule(const struct osp_unwind_row *a, const struct osp_unwind_row *b)
{
    return memcmp((const char *)a + 4, (const char *)b + 4, sizeof *a - 4) == 0;
}

static void describe(char *out, size_t size, const char *path, uint64_t vaddr,
                     const struct osp_unwind_row *mine, const struct osp_unwind_row *libdw)
{
    snprintf(out, size,
             "%s: at %#" PRIx64 " translator cfa %u%+d ra %u%+d fp %u%+d plt %u, libdw cfa %u%+d "
             "ra %u%+d fp %u%+d plt %u",
             path, vaddr, mine ? mine->cfa_rule : 99, mine ? mine->cfa_offset : 0,
             mine ? mine->ra_rule : 99, mine ? mine->ra_offset : 0, mine ? mine->fp_rule : 99,
             mine ? mine->fp_offset : 0, mine ? mine->plt_threshold : 0, libdw->cfa_rule,
             libdw->cfa_offset, libdw->ra_rule, libdw->ra_offset, libdw->fp_rule, libdw->fp_offset,
             libdw->plt_threshold);
}

static void note_difference(struct cfi_compare_totals *t, const char *text, FILE *log)
{
    if (t->first_difference[0] == '\0')
        snprintf(t->first_difference, sizeof t->first_difference, "%s", text);
    if (log != NULL)
        fprintf(log, "differs: %s\n", text);
}

/* libdw's row at each sampled address, against the translator's table. */
static void compare_sampled(const char *path, uint16_t machine, const struct ospd_unwind_rows *mine,
                            unsigned samples, struct cfi_compare_totals *t, FILE *log)
{
    const struct ospd_unwind_arch *arch = ospd_unwind_arch_of(machine);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    Dwarf_CFI *cfi = elf ? dwarf_getcfi_elf(elf) : NULL;
    /* .debug_frame, where .eh_frame has no row (a cgo Go program's Go functions) */
    Dwarf *dwarf = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
    Dwarf_CFI *debug_cfi = dwarf ? dwarf_getcfi(dwarf) : NULL;
    if (cfi == NULL && debug_cfi == NULL) {
        t->failed++;
        if (log != NULL)
            fprintf(log, "%s: libdw has no CFI for it\n", path);
        goto done;
    }
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (const char *c = path; *c; c++)
        seed = (seed ^ (uint8_t)*c) * 0x100000001b3u;
    uint64_t span = mine->end_vaddr - mine->start_vaddr;
    unsigned reported = 0;
    for (unsigned i = 0; i < samples; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        uint64_t pick = seed >> 11;
        uint32_t offset;
        if (i % 3 == 2 || mine->count < 2) {
            offset = (uint32_t)(pick % span);
        } else {
            offset = mine->rows[1 + pick % (mine->count - 1)].pc_offset;
            if (i % 3 == 1 && offset > 0)
                offset--;
        }
        if (offset >= span)
            continue;
        uint64_t vaddr = mine->start_vaddr + offset;
        struct osp_unwind_row want = {.pc_offset = offset, .cfa_rule = OSP_CFA_UNKNOWN};
        Dwarf_Frame *frame = NULL;
        for (int k = 0; k < 2 && want.cfa_rule == OSP_CFA_UNKNOWN; k++) {
            Dwarf_CFI *from = k == 0 ? cfi : debug_cfi;
            if (from == NULL || dwarf_cfi_addrframe(from, vaddr, &frame) != 0)
                continue;
            bool signal_frame = false;
            dwarf_frame_info(frame, NULL, NULL, &signal_frame);
            want = ospd_unwind_libdw_row(frame, arch, offset, signal_frame);
            free(frame);
        }
        const struct osp_unwind_row *got = row_at(mine, offset);
        t->addresses++;
        if (got == NULL || !same_rule(got, &want)) {
            t->differing++;
            if (reported++ < 3) {
                char text[512];
                describe(text, sizeof text, path, vaddr, got, &want);
                note_difference(t, text, log);
            }
        }
    }
done:
    if (cfi)
        dwarf_cfi_end(cfi);
    if (dwarf)
        dwarf_end(dwarf);
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
}

/* Both builders' tables, row for row. */
static void compare_full(const char *path, uint16_t machine, const struct ospd_unwind_rows *mine,
                         struct cfi_compare_totals *t, FILE *log)
{
    struct ospd_unwind_source src = {.path = path, .machine = machine, .libdw = true};
    struct ospd_unwind_rows theirs;
    char err[256];
    uint64_t t0 = thread_cpu_ns();
    int rc = ospd_unwind_build(&src, &theirs, err, sizeof err);
    uint64_t took = thread_cpu_ns() - t0;
    if (rc != 0) {
        t->failed++;
        if (log != NULL)
            fprintf(log, "%s: libdw: %s\n", path, err);
        return;
    }
    t->libdw_ns += took;
    /* Every boundary of either table, the rows in force there. */
    uint32_t i = 0, j = 0, differing = 0;
    while (i < mine->count || j < theirs.count) {
        uint32_t at;
        if (j >= theirs.count ||
            (i < mine->count && mine->rows[i].pc_offset <= theirs.rows[j].pc_offset))
            at = mine->rows[i].pc_offset;
        else
            at = theirs.rows[j].pc_offset;
        while (i < mine->count && mine->rows[i].pc_offset <= at)
            i++;
        while (j < theirs.count && theirs.rows[j].pc_offset <= at)
            j++;
        const struct osp_unwind_row *a = i ? &mine->rows[i - 1] : NULL;
        const struct osp_unwind_row *b = j ? &theirs.rows[j - 1] : NULL;
        t->addresses++;
        if (a == NULL || b == NULL || !same_rule(a, b)) {
            t->differing++;
            if (differing++ < 3 && b != NULL) {
                char text[512];
                describe(text, sizeof text, path, mine->start_vaddr + at, a, b);
                note_difference(t, text, log);
            }
        }
    }
    if (mine->count != theirs.count && differing == 0 && log != NULL)
        fprintf(log, "%s: %u rows against libdw's %u, the same rules\n", path, mine->count,
                theirs.count);
    ospd_unwind_rows_free(&theirs);
}

static bool elf_of(const char *path, uint16_t machine)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return false;
    Elf64_Ehdr eh;
    bool ok = pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
              memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
              eh.e_machine == machine && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN);
    close(fd);
    return ok;
}

/* Whether the translator builds this object's rows, or leaves them to libdw. */
static bool translated(const char *path, uint16_t machine, const struct ospd_unwind_rows *rows)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
    struct ospd_unwind_rows again = {0};
    bool yes = elf != NULL &&
               ospd_cfi_rows_elf(elf, machine, rows->start_vaddr, rows->end_vaddr, &again) == 0;
    ospd_unwind_rows_free(&again);
    if (elf)
        elf_end(elf);
    if (fd >= 0)
        close(fd);
    return yes;
}

int cfi_compare_object(const char *path, const struct cfi_compare_options *options,
                       struct cfi_compare_totals *t, FILE *log)
{
    uint16_t machine = options->machine ? options->machine : OSPD_OWN_MACHINE;
    if ((options->max_objects != 0 && t->objects >= options->max_objects) || !elf_of(path, machine))
        return 0;
    struct ospd_unwind_source src = {.path = path, .machine = machine};
    struct ospd_unwind_rows mine;
    char err[256];
    uint64_t t0 = thread_cpu_ns();
    int rc = ospd_unwind_build(&src, &mine, err, sizeof err);
    uint64_t took = thread_cpu_ns() - t0;
    t->objects++;
    if (rc != 0) {
        t->unbuilt++; /* no code, no CFI: neither builder has rows */
        return 0;
    }
    if (!translated(path, machine, &mine)) {
        t->left_to_libdw++;
        if (log != NULL)
            fprintf(log, "%s: left to libdw\n", path);
    } else {
        t->translated++;
        t->rows += mine.count;
        t->translator_ns += took;
        if (options->full)
            compare_full(path, machine, &mine, t, log);
        else
            compare_sampled(path, machine, &mine, options->samples, t, log);
    }
    if (options->verbose && log != NULL)
        fprintf(log, "%s: %u rows, %.1f ms\n", path, mine.count, took / 1e6);
    ospd_unwind_rows_free(&mine);
    return 0;
}

static const struct cfi_compare_options *walk_options;
static struct cfi_compare_totals *walk_totals;
static FILE *walk_log;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode) && st->st_size >= (off_t)sizeof(Elf64_Ehdr))
        cfi_compare_object(path, walk_options, walk_totals, walk_log);
    return 0;
}

int cfi_compare_tree(const char *dir, const struct cfi_compare_options *options,
                     struct cfi_compare_totals *t, FILE *log)
{
    walk_options = options;
    walk_totals = t;
    walk_log = log;
    return nftw(dir, visit, 16, FTW_PHYS) == 0 ? 0 : -errno;
}
